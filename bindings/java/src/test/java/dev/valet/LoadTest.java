package dev.valet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Valet.createAsync: progress in stage order on the executor, then a working Valet; a load the
 * app cancels from its listener ends cancelled (a Valet that finished first is closed); a missing
 * model fails the future with the status create would throw.
 */
class LoadTest {
  private ExecutorService executor;

  @BeforeEach
  void start() {
    executor = Executors.newFixedThreadPool(2);
  }

  @AfterEach
  void stop() throws InterruptedException {
    executor.shutdown();
    assertTrue(executor.awaitTermination(60, TimeUnit.SECONDS));
  }

  /** A quantized model beside the shared test model (stories260K is f32: nothing to pack). */
  private static Valet.Options options() {
    final File f = new File(new File(TestModel.path()).getParentFile(), "synth-tiny-q4_0.gguf");
    Assumptions.assumeTrue(f.isFile(), "skipped: model " + f + " not found");
    return new Valet.Options(f.getPath()).threads(1).kvCapacityBytes(4L << 20);
  }

  @Test
  void reportsItsStagesInOrderThenHandsOverAWorkingValet() throws Exception {
    final List<LoadStage> stages = new ArrayList<>();
    final long[] packed = new long[2];
    final CompletableFuture<Valet> loading =
        Valet.createAsync(
            options(),
            executor,
            (stage, done, total) -> {
              synchronized (stages) {
                stages.add(stage);
                if (stage == LoadStage.PACK) {
                  packed[0] = done;
                  packed[1] = total;
                }
              }
            });
    try (Valet valet = loading.get(60, TimeUnit.SECONDS)) {
      synchronized (stages) {
        assertEquals(LoadStage.MAP, stages.get(0));
        assertEquals(LoadStage.PREPARE, stages.get(stages.size() - 1));
        for (int i = 1; i < stages.size(); ++i) {
          assertTrue(stages.get(i - 1).ordinal() <= stages.get(i).ordinal(), stages.toString());
        }
        assertTrue(packed[1] > 0 && packed[0] == packed[1], packed[0] + " of " + packed[1]);
      }
      final TaskResult r =
          valet.submit(Request.builder().prompt("Once upon a time").maxTokens(4).build(), null).result().get();
      assertEquals(TaskState.DONE, r.state());
      assertEquals(4, r.tokens());
    }
  }

  @Test
  void cancelledFromItsListenerEndsCancelled() throws Exception {
    final CompletableFuture<?>[] self = new CompletableFuture<?>[1];
    final Object lock = new Object();
    final CompletableFuture<Valet> loading;
    synchronized (lock) {
      loading =
          Valet.createAsync(
              options(),
              executor,
              (stage, done, total) -> {
                synchronized (lock) {
                  if (stage == LoadStage.MAP) self[0].cancel(true);
                }
              });
      self[0] = loading;
    }
    assertThrows(CancellationException.class, () -> loading.get(60, TimeUnit.SECONDS));
    assertTrue(loading.isCancelled());
  }

  @Test
  void aMissingModelFailsTheFuture() {
    final CompletableFuture<Valet> loading =
        Valet.createAsync(new Valet.Options(TestModel.path() + ".absent").threads(1), executor);
    final ExecutionException e = assertThrows(ExecutionException.class, () -> loading.get(60, TimeUnit.SECONDS));
    assertTrue(e.getCause() instanceof ValetException, e.toString());
    assertEquals(ValetException.NOT_FOUND, ((ValetException) e.getCause()).status());
  }
}
