package dev.valet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Closing under load and from anywhere: close() never frees a scheduler under a call in flight,
 * completes from a listener, a result continuation or many threads at once, and a forgotten Valet
 * is freed.
 */
class CloseTest {
  private static final int THERMAL_EMERGENCY = 5;

  /** Runs `call` on the first token of a task and records what it threw. */
  private static Throwable fromFirstToken(Valet valet, Tier tier, Runnable call) throws Exception {
    final CompletableFuture<Throwable> thrown = new CompletableFuture<>();
    final Task task =
        valet.submit(
            tier,
            "Once upon a time",
            4,
            (t, token, text) -> {
              if (thrown.isDone()) return;
              try {
                call.run();
                thrown.complete(null);
              } catch (Throwable e) {
                thrown.complete(e);
              }
            });
    assertEquals(TaskState.DONE, task.result().get().state());  // the listener's call changed nothing
    return thrown.get();
  }

  /** close() from a listener returns at once; a thread of valet's stops and frees it. */
  @Test
  void closeFromAListenerFinishesOnAThreadOfItsOwn() throws Exception {
    final long live = Valet.liveNativeSchedulers();
    final Valet valet = Valet.create(TestModel.options());
    valet.onThermalStatus(THERMAL_EMERGENCY);  // the background task waits: the close cancels it
    final Task held = valet.submit(Tier.OFFLINE_INDEXING, "Held back", 8, null);
    final CompletableFuture<Throwable> thrown = new CompletableFuture<>();
    final Task chat =
        valet.submit(
            Tier.FOREGROUND_CHAT,
            "Once upon a time",
            400,
            (t, token, text) -> {
              if (thrown.isDone()) return;
              try {
                valet.close();
                thrown.complete(null);
              } catch (Throwable e) {
                thrown.complete(e);
              }
            });
    assertNull(thrown.get());
    valet.closed().get();
    assertTrue(held.result().get().aborted());
    final TaskResult r = chat.result().get();
    assertTrue(r.aborted() || r.state() == TaskState.DONE, r.state().toString());
    assertThrows(IllegalStateException.class, () -> valet.submit(Tier.FOREGROUND_CHAT, "x", 1, null));
    valet.close();  // idempotent
    assertEquals(live, Valet.liveNativeSchedulers());
  }

  /** A result continuation that closes the Valet (it runs where the future completes). */
  @Test
  void closeFromAResultContinuation() throws Exception {
    final long live = Valet.liveNativeSchedulers();
    final Valet valet = Valet.create(TestModel.options());
    final CountDownLatch hold = new CountDownLatch(1);
    final Task task =
        valet.submit(
            Tier.FOREGROUND_CHAT,
            "Once upon a time",
            4,
            (t, token, text) -> {
              try {
                hold.await();  // the continuation is registered before the future can complete
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            });
    final CompletableFuture<Void> closedByContinuation = task.result().thenRun(valet::close);
    hold.countDown();
    closedByContinuation.get();
    valet.closed().get();
    assertEquals(live, Valet.liveNativeSchedulers());
  }

  /** Sixteen threads close at once: each returns with the Valet freed. */
  @Test
  void closeFromSixteenThreadsAtOnce() throws Exception {
    final long live = Valet.liveNativeSchedulers();
    final Valet valet = Valet.create(TestModel.options());
    final List<CompletableFuture<TaskResult>> results = new ArrayList<>();
    for (int i = 0; i < 8; ++i) results.add(valet.submit(Tier.values()[i % 4], "Once upon a time", 50, null).result());
    final CountDownLatch start = new CountDownLatch(1);
    final List<Thread> closers = new ArrayList<>();
    final List<Throwable> thrown = Collections.synchronizedList(new ArrayList<>());
    for (int i = 0; i < 16; ++i) {
      final Thread t =
          new Thread(
              () -> {
                try {
                  start.await();
                  valet.close();
                  assertTrue(valet.closed().isDone());
                } catch (Throwable e) {
                  thrown.add(e);
                }
              });
      closers.add(t);
      t.start();
    }
    start.countDown();
    for (Thread t : closers) t.join();
    assertEquals(List.of(), thrown);
    for (CompletableFuture<TaskResult> f : results) {
      assertTrue(f.isDone());
      assertTrue(f.get().state() == TaskState.DONE || f.get().aborted());
    }
    assertEquals(live, Valet.liveNativeSchedulers());
  }

  @Test
  void waitIdleThrowsFromAListenerAndTheRestWorks() throws Exception {
    try (Valet valet = Valet.create(TestModel.options())) {
      final Throwable waitIdle = fromFirstToken(valet, Tier.FOREGROUND_CHAT, valet::waitIdle);
      assertInstanceOf(IllegalStateException.class, waitIdle);
      assertTrue(waitIdle.getMessage().contains("waitIdle()"), waitIdle.getMessage());
      // What waits only for the model's thread, or not at all, works from a listener.
      assertNull(fromFirstToken(valet, Tier.INLINE_SUGGESTION, () -> valet.setMemoryBudgets(4L << 20, 0)));
      assertNull(fromFirstToken(valet, Tier.FOREGROUND_CHAT, valet::stats));
      valet.waitIdle();
    }
  }

  @Test
  void aTaskOfAnotherValetIsNotCancelled() throws Exception {
    try (Valet a = Valet.create(TestModel.options());
        Valet b = Valet.create(TestModel.options())) {
      a.onThermalStatus(THERMAL_EMERGENCY);  // holds the task: surely unfinished
      final Task task = a.submit(Tier.OFFLINE_INDEXING, "Held back", 8, null);
      assertFalse(b.cancel(task));
      assertTrue(a.cancel(task));
      assertEquals(TaskState.CANCELLED, task.result().get().state());
    }
  }

  /**
   * Eight threads submit while another waits for idle and the main thread closes, at a different
   * moment each round: no call runs on a freed scheduler, every accepted task's future completes,
   * and once close() has begun submits throw IllegalStateException.
   */
  @Test
  void closeRacingSubmitsAndWaitersLosesNothing() throws Exception {
    final Valet.Options options = TestModel.options();
    final long live = Valet.liveNativeSchedulers();
    for (int round = 0; round < 200; ++round) {
      final Valet valet = Valet.create(options);
      final int closeAfter = round % 33;  // accepted submits before close(); 32 are possible
      final CountDownLatch enoughSubmitted = new CountDownLatch(closeAfter);
      final List<CompletableFuture<TaskResult>> accepted = Collections.synchronizedList(new ArrayList<>());
      final AtomicInteger doneCalls = new AtomicInteger();
      final TokenListener countDone =
          new TokenListener() {
            @Override
            public void onToken(Task task, int token, String text) {}

            @Override
            public void onDone(Task task, TaskResult r) {
              doneCalls.incrementAndGet();
            }
          };
      final List<Thread> threads = new ArrayList<>();
      for (int t = 0; t < 8; ++t) {
        final Tier tier = Tier.values()[t % 4];
        threads.add(
            new Thread(
                () -> {
                  for (int i = 0; i < 4; ++i) {
                    try {
                      accepted.add(valet.submit(tier, "Once upon a time", 3, countDone).result());
                      enoughSubmitted.countDown();
                    } catch (IllegalStateException closed) {
                      return;
                    }
                  }
                }));
      }
      threads.add(
          new Thread(
              () -> {
                try {
                  for (int i = 0; i < 3; ++i) valet.waitIdle();
                } catch (IllegalStateException closed) {
                  // close() came first
                }
              }));
      for (Thread t : threads) t.start();
      enoughSubmitted.await();
      valet.close();
      for (Thread t : threads) t.join();
      for (CompletableFuture<TaskResult> f : accepted) {
        final TaskResult r = f.get();
        assertTrue(r.state() == TaskState.DONE || r.aborted(), "round " + round + ": " + r.state());
      }
      assertEquals(accepted.size(), doneCalls.get(), "round " + round);
      assertThrows(IllegalStateException.class, () -> valet.submit(Tier.FOREGROUND_CHAT, "late", 1, null));
      valet.close();  // idempotent
    }
    assertEquals(live, Valet.liveNativeSchedulers());
    assertEquals(0, Valet.liveTaskReferences());
  }

  /** Creates a Valet, finishes a task on it and lets go of both. */
  private static void createAndForget() throws Exception {
    final Valet valet = Valet.create(TestModel.options());
    assertEquals(TaskState.DONE, valet.submit(Tier.FOREGROUND_CHAT, "Once", 2, null).result().get().state());
  }

  @Test
  void aForgottenValetIsFreedOnceCollected() throws Exception {
    TestModel.path();
    final long live = Valet.liveNativeSchedulers();
    final long freed = ForgottenValets.freedCount();
    createAndForget();
    assertEquals(live + 1, Valet.liveNativeSchedulers());
    boolean collected = false;
    for (int attempt = 0; attempt < 100 && !collected; ++attempt) {
      System.gc();
      collected = ForgottenValets.awaitFreed(freed + 1, 100);  // woken by the daemon
    }
    assertTrue(collected, "the daemon freed the forgotten Valet");
    assertEquals(live, Valet.liveNativeSchedulers());
  }
}
