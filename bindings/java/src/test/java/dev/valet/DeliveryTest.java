package dev.valet;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Where listeners run and what they get: a slow listener holds back only its own task, an
 * executor's thread runs a task's callbacks in order, cancel() tells the truth under racing
 * threads, text crosses exactly both ways, and the Android hooks are no-ops after close(). Waits
 * are on latches and futures, never sleeps.
 */
class DeliveryTest {
  private static final int THERMAL_SEVERE = 3;
  private static final int TRIM_MEMORY_COMPLETE = 80;

  /** The order in which listeners of several tasks ran. */
  private static final class Events {
    final List<String> order = Collections.synchronizedList(new ArrayList<>());

    int index(String event) {
      return order.indexOf(event);
    }
  }

  /**
   * The scene: a background listener blocked in the app (a 300 ms database write, here a
   * latch) while the user opens the chat. The chat runs and is delivered to its end before the
   * background task's next token, and the background task then finishes as it would alone.
   */
  @Test
  void aSlowBackgroundListenerNeverDelaysTheChat() throws Exception {
    try (Valet valet = Valet.create(TestModel.options())) {
      final String prompt = "Once upon a time, there was a big red ball.";
      final TaskResult alone = valet.submit(Tier.OFFLINE_INDEXING, prompt, 60, null).result().get();
      final Events events = new Events();
      final CountDownLatch blocked = new CountDownLatch(1);
      final CountDownLatch release = new CountDownLatch(1);
      final Task background =
          valet.submit(
              Tier.OFFLINE_INDEXING,
              prompt,
              60,
              new TokenListener() {
                int tokens;

                @Override
                public void onToken(Task task, int token, String text) {
                  events.order.add("background token " + ++tokens);
                  if (tokens > 1) return;
                  blocked.countDown();
                  try {
                    release.await();
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                }
              });
      blocked.await();
      final Task chat = valet.submit(Tier.FOREGROUND_CHAT, "Tell me a story.", 8, null);
      chat.result().thenRun(() -> events.order.add("chat done"));
      assertEquals(TaskState.DONE, chat.result().get().state());
      release.countDown();
      final TaskResult r = background.result().get();
      assertTrue(events.index("chat done") < events.index("background token 2"), events.order.toString());
      assertEquals(TaskState.DONE, r.state());
      assertEquals(alone.text(), r.text());
      assertEquals(alone.tokens(), r.tokens());
      assertTrue(r.parks() > 0);  // parked for its consumer (or the chat), resumed bit-identically
    }
  }

  /** A task's callbacks on the app's executor: there, in order, the result future last. */
  @Test
  void anExecutorRunsEachTasksCallbacksInOrder() throws Exception {
    final ExecutorService executor = Executors.newFixedThreadPool(3, r -> new Thread(r, "app-executor"));
    // The executor's threads are busy until every continuation is registered, so none of the
    // futures can have completed before (a continuation added then would run on this thread).
    final CountDownLatch registered = new CountDownLatch(1);
    for (int t = 0; t < 3; ++t) {
      executor.execute(
          () -> {
            try {
              registered.await();
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
          });
    }
    try (Valet valet = Valet.create(TestModel.options().callbackExecutor(executor))) {
      final List<CompletableFuture<String>> checks = new ArrayList<>();
      for (int i = 0; i < 6; ++i) {
        final CompletableFuture<String> check = new CompletableFuture<>();
        final List<String> seen = Collections.synchronizedList(new ArrayList<>());
        final Task task =
            valet.submit(
                Tier.values()[i % 4],
                "Once upon a time",
                12,
                new TokenListener() {
                  @Override
                  public void onToken(Task task, int token, String text) {
                    seen.add("token on " + Thread.currentThread().getName());
                  }

                  @Override
                  public void onDone(Task task, TaskResult r) {
                    seen.add("done " + r.tokens() + " on " + Thread.currentThread().getName());
                  }
                });
        task.result()
            .thenRun(() -> check.complete(String.join(", ", seen) + ", future on " + Thread.currentThread().getName()));
        checks.add(check);
      }
      registered.countDown();
      for (CompletableFuture<String> check : checks) {
        final String[] parts = check.get().split(", ");
        assertEquals(14, parts.length, check.get());
        for (int k = 0; k < 12; ++k) assertEquals("token on app-executor", parts[k]);
        assertEquals("done 12 on app-executor", parts[12]);
        assertEquals("future on app-executor", parts[13]);
      }
    } finally {
      executor.shutdown();
    }
  }

  /**
   * close() on the executor's own (single) thread while tasks' callbacks are queued for it: it
   * completes, and the queued callbacks, onDone included, run after it.
   */
  @Test
  void closeOnTheExecutorsOwnThreadCompletes() throws Exception {
    final ExecutorService executor = Executors.newSingleThreadExecutor();
    final long live = Valet.liveNativeSchedulers();
    final Valet valet = Valet.create(TestModel.options().callbackExecutor(executor));
    final CountDownLatch busy = new CountDownLatch(1);
    final CountDownLatch goOn = new CountDownLatch(1);
    executor.execute(
        () -> {
          busy.countDown();
          try {
            goOn.await();  // the app's thread is busy while tokens pile up for it
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          valet.close();
        });
    busy.await();
    final List<CompletableFuture<TaskResult>> results = new ArrayList<>();
    for (int i = 0; i < 4; ++i) results.add(valet.submit(Tier.values()[i], "Once upon a time", 200, null).result());
    goOn.countDown();
    valet.closed().get();
    for (CompletableFuture<TaskResult> f : results) assertTrue(f.get().state() == TaskState.DONE || f.get().aborted());
    assertEquals(live, Valet.liveNativeSchedulers());
    executor.shutdown();
  }

  /** Sixteen threads submit and cancel: true exactly for the tasks that end CANCELLED. */
  @Test
  void cancelIsTrueExactlyWhenTheTaskEndsCancelled() throws Exception {
    try (Valet valet = Valet.create(TestModel.options())) {
      final Map<Task, Boolean> saidTrue = new ConcurrentHashMap<>();
      final List<Task> tasks = Collections.synchronizedList(new ArrayList<>());
      final List<Thread> threads = new ArrayList<>();
      for (int t = 0; t < 16; ++t) {
        final Random rng = new Random(100 + t);
        threads.add(
            new Thread(
                () -> {
                  final List<Task> mine = new ArrayList<>();
                  for (int i = 0; i < 12; ++i) {
                    final Task task =
                        valet.submit(Tier.values()[rng.nextInt(4)], "Once upon a time", 1 + rng.nextInt(4), null);
                    mine.add(task);
                    tasks.add(task);
                    final Task victim = mine.get(rng.nextInt(mine.size()));
                    if (rng.nextBoolean()) Thread.yield();
                    if (victim.cancel()) saidTrue.put(victim, true);
                  }
                }));
      }
      for (Thread t : threads) t.start();
      for (Thread t : threads) t.join();
      int cancelled = 0;
      for (Task task : tasks) {
        final TaskState state = task.result().get().state();
        assertEquals(saidTrue.containsKey(task), state == TaskState.CANCELLED, "task " + task.id() + " " + state);
        cancelled += state == TaskState.CANCELLED ? 1 : 0;
      }
      assertTrue(cancelled > 0);
    }
  }

  /**
   * synth-tiny (random weights, the same vocabulary) generates bytes freely: seeds are tried in
   * order until one generated U+0000 (byte token 3) and one delivered a character whose bytes came
   * over several tokens. Every byte reaches Java: the result's bytes hold the NUL, and the tokens'
   * texts, each whole characters, add up to the result's text.
   */
  @Test
  void generatedTextCrossesExactly() throws Exception {
    final File model = new File(new File(TestModel.path()).getParentFile(), "synth-tiny-q8_0.gguf");
    Assumptions.assumeTrue(model.isFile(), "skipped: " + model + " not found");
    boolean sawNul = false;
    boolean sawSplit = false;
    try (Valet valet = Valet.create(new Valet.Options(model.getPath()).threads(1))) {
      for (long seed = 1; seed <= 64 && !(sawNul && sawSplit); ++seed) {
        final StringBuilder streamed = new StringBuilder();
        final boolean[] nulToken = {false};
        final boolean[] split = {false};
        final Request request =
            Request.builder().prompt("Once upon a time").maxTokens(300).temperature(3.0f).topK(0).topP(1.0f)
                .minP(0.0f).seed(seed).build();
        final TaskResult r =
            valet.submit(
                    request,
                    (task, token, text) -> {
                      streamed.append(text);
                      if (token == 3) nulToken[0] = true;
                      // A continuation byte's token (<0x80>..<0xBF>) bringing a whole character.
                      if (token >= 3 + 0x80 && token <= 3 + 0xBF && text.codePoints().anyMatch(c -> c >= 0x80 && c != 0xFFFD)) {
                        split[0] = true;
                      }
                    })
                .result()
                .get();
        assertEquals(r.text(), streamed.toString());
        assertEquals(r.text(), new String(r.textBytes(), StandardCharsets.UTF_8));
        if (nulToken[0]) {
          sawNul = true;
          assertTrue(indexOf(r.textBytes(), (byte) 0) >= 0, "the NUL byte is kept");
          assertTrue(r.text().indexOf('\u0000') >= 0);
        }
        sawSplit |= split[0];
      }
    }
    assertTrue(sawNul && sawSplit, "nul " + sawNul + ", split " + sawSplit);
  }

  private static int indexOf(byte[] bytes, byte b) {
    for (int i = 0; i < bytes.length; ++i) {
      if (bytes[i] == b) return i;
    }
    return -1;
  }

  /** A string that is not valid UTF-16 is refused, never rewritten. */
  @Test
  void aLoneSurrogateIsRefused() throws Exception {
    try (Valet valet = Valet.create(TestModel.options())) {
      final IllegalArgumentException prompt =
          assertThrows(IllegalArgumentException.class, () -> valet.submit(Tier.FOREGROUND_CHAT, "ab\uD800c", 1, null));
      assertTrue(prompt.getMessage().contains("the prompt is not valid UTF-16: a lone surrogate at index 2"), prompt.getMessage());
      final Request chat =
          Request.builder().message("user", "fine \uD83D\uDE00").message("user", "broken \uDE00").maxTokens(1).build();
      final IllegalArgumentException content =
          assertThrows(IllegalArgumentException.class, () -> valet.submit(chat, null));
      assertTrue(content.getMessage().contains("message 1's content"), content.getMessage());
      assertThrows(IllegalArgumentException.class, () -> valet.tokenize("\uD800"));
      assertEquals(0, valet.stats().submitted);
      // A pair is fine.
      assertEquals(TaskState.DONE, valet.submit(Tier.FOREGROUND_CHAT, "\uD83D\uDE00", 1, null).result().get().state());
    }
  }

  /** A task's state and park cause, as the scheduler has them. */
  @Test
  void infoTellsAStateAndWhyATaskIsParked() throws Exception {
    try (Valet valet = Valet.create(TestModel.options())) {
      valet.onThermalStatus(5);  // EMERGENCY: only the chat tier runs
      final Task held = valet.submit(Tier.OFFLINE_INDEXING, "Held back", 8, null);
      final TaskInfo queued = valet.info(held);
      assertEquals(TaskState.QUEUED, queued.state());
      assertEquals(ParkCause.NONE, queued.parkCause());
      valet.retryJournals();  // nothing waits for a journal: a no-op
      valet.onThermalStatus(0);
      held.result().get();
      assertEquals(TaskState.DONE, valet.info(held).state());
    }
  }

  /** Android may deliver trim, thermal and lifecycle callbacks after close(): they do nothing. */
  @Test
  void theAndroidHooksAreNoOpsAfterClose() {
    final Valet valet = Valet.create(TestModel.options());
    final ValetLifecycleObserver observer = new ValetLifecycleObserver(valet);
    valet.close();
    valet.onTrimMemory(TRIM_MEMORY_COMPLETE);
    valet.onThermalStatus(THERMAL_SEVERE, 1.5f);
    valet.onLifecycleEvent(LifecycleEvent.ON_STOP);
    observer.onStop(null);
    assertEquals(0, observer.refusedEvents());
    assertThrows(IllegalStateException.class, valet::stats);
    assertFalse(valet.closed().isCompletedExceptionally());
    assertTrue(valet.closed().isDone());
  }

  @Test
  void textBytesAreACopy() throws Exception {
    try (Valet valet = Valet.create(TestModel.options())) {
      final TaskResult r = valet.submit(Tier.FOREGROUND_CHAT, "Once upon a time", 4, null).result().get();
      final byte[] bytes = r.textBytes();
      final ByteArrayOutputStream copy = new ByteArrayOutputStream();
      copy.write(bytes, 0, bytes.length);
      if (bytes.length > 0) bytes[0] ^= 1;
      assertArrayEquals(copy.toByteArray(), r.textBytes());
    }
  }
}
