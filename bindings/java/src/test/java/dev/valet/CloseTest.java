package dev.valet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
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
 * Closing under load and from the wrong thread: close() never frees a scheduler under a call in
 * flight, never ends the process when a listener calls it, and a forgotten Valet is freed.
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

  @Test
  void closeFromAListenerThrowsAndTheValetStillClosesFromAnotherThread() throws Exception {
    final long live = Valet.liveNativeSchedulers();
    final Valet valet = Valet.create(TestModel.options());
    final Throwable e = fromFirstToken(valet, Tier.FOREGROUND_CHAT, valet::close);
    assertInstanceOf(IllegalStateException.class, e);
    assertTrue(e.getMessage().contains("close() called from a listener of this Valet"), e.getMessage());
    // Including from an onDone that close() itself delivers, on the closing thread.
    valet.onThermalStatus(THERMAL_EMERGENCY);  // the next task waits: close() cancels it
    final CompletableFuture<Throwable> fromOnDone = new CompletableFuture<>();
    final List<Thread> onDoneThread = new ArrayList<>();
    valet.submit(
        Tier.OFFLINE_INDEXING,
        "Held back",
        8,
        new TokenListener() {
          @Override
          public void onToken(Task task, int token, String text) {}

          @Override
          public void onDone(Task task, TaskResult r) {
            onDoneThread.add(Thread.currentThread());
            try {
              valet.close();
              fromOnDone.complete(null);
            } catch (Throwable t) {
              fromOnDone.complete(t);
            }
          }
        });
    valet.close();
    assertInstanceOf(IllegalStateException.class, fromOnDone.get());
    assertEquals(List.of(Thread.currentThread()), onDoneThread);
    assertThrows(IllegalStateException.class, () -> valet.submit(Tier.FOREGROUND_CHAT, "x", 1, null));
    assertEquals(live, Valet.liveNativeSchedulers());
  }

  @Test
  void callsThatWaitForTheWorkerThrowFromItsListeners() throws Exception {
    try (Valet valet = Valet.create(TestModel.options())) {
      final Throwable waitIdle = fromFirstToken(valet, Tier.FOREGROUND_CHAT, valet::waitIdle);
      assertInstanceOf(IllegalStateException.class, waitIdle);
      assertTrue(waitIdle.getMessage().contains("waitIdle()"), waitIdle.getMessage());
      final Throwable budgets =
          fromFirstToken(valet, Tier.INLINE_SUGGESTION, () -> valet.setMemoryBudgets(4L << 20, 0));
      assertInstanceOf(IllegalStateException.class, budgets);
      // What does not wait works from a listener.
      assertSame(null, fromFirstToken(valet, Tier.FOREGROUND_CHAT, valet::stats));
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
