package dev.valet;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Durable tasks from Java: one closed mid-generation is recovered by the next Valet over the same
 * snapshot directory and finishes with the tokens of an uninterrupted run; ack forgets an ended one.
 */
class DurableTest {
  @TempDir Path dir;

  private static Request request(String key) {
    return Request.builder()
        .tier(Tier.OFFLINE_INDEXING)
        .prompt("Once upon a time")
        .maxTokens(48)
        .temperature(0.8f)
        .repeatPenalty(1.1f)
        .seed(77)
        .durableKey(key)
        .build();
  }

  /** Collects a task's tokens. */
  private static final class Tokens implements TokenListener {
    final List<Integer> ids = new ArrayList<>();
    final CountDownLatch some = new CountDownLatch(4);

    @Override
    public synchronized void onToken(Task task, int token, String text) {
      ids.add(token);
      some.countDown();
    }

    synchronized int[] array() {
      return ids.stream().mapToInt(Integer::intValue).toArray();
    }
  }

  @Test
  void aClosedTaskIsRecoveredAndFinishesWithTheUninterruptedTokens() throws Exception {
    final Valet.Options options = TestModel.options().snapshotDir(dir.toString());
    final Tokens reference = new Tokens();
    try (Valet valet = Valet.create(options)) {
      final TaskResult done = valet.submit(request("ref-1"), reference).result().get(60, TimeUnit.SECONDS);
      assertEquals(TaskState.DONE, done.state());
      assertTrue(valet.ack("ref-1"));
      assertFalse(valet.ack("ref-1"), "acknowledged already");
      assertThrows(ValetException.class, () -> valet.ack("../ref-1"));
    }

    final Tokens before = new Tokens();
    try (Valet valet = Valet.create(options)) {
      valet.submit(request("doc-1"), before);
      assertTrue(before.some.await(60, TimeUnit.SECONDS));
    } // close() keeps the journal

    final Tokens after = new Tokens();
    try (Valet valet = Valet.create(options)) {
      final List<RecoveredTask> found = valet.recover(task -> after);
      assertEquals(1, found.size());
      final RecoveredTask t = found.get(0);
      assertEquals("doc-1", t.durableKey());
      assertEquals(Tier.OFFLINE_INDEXING, t.tier());
      final List<Integer> all = new ArrayList<>();
      for (int id : t.tokens()) all.add(id);
      if (t.state() == TaskState.QUEUED) {
        assertNotNull(t.task());
        assertEquals(TaskState.DONE, t.task().result().get(60, TimeUnit.SECONDS).state());
        for (int id : after.array()) all.add(id);
      } else {
        assertEquals(TaskState.DONE, t.state()); // it had ended before close() stopped it
      }
      assertArrayEquals(reference.array(), all.stream().mapToInt(Integer::intValue).toArray());
      assertTrue(valet.ack("doc-1"));
      assertTrue(valet.recover(task -> null).isEmpty());
    }
    assertTrue(Files.isDirectory(dir.resolve("tasks")));
  }

  @Test
  void unacknowledgedResultsOverTheDiskBudgetRefuseNewDurableTasks() throws Exception {
    final Valet.Options options = TestModel.options().snapshotDir(dir.toString()).durableDiskBudgetBytes(1);
    try (Valet valet = Valet.create(options)) {
      assertEquals(TaskState.DONE, valet.submit(request("b-1"), null).result().get(60, TimeUnit.SECONDS).state());
      final ValetException full = assertThrows(ValetException.class, () -> valet.submit(request("b-2"), null));
      assertEquals(6, full.status(), "VALET_RESOURCE_EXHAUSTED: " + full.getMessage());
      assertTrue(valet.ack("b-1"));
      assertEquals(TaskState.DONE, valet.submit(request("b-2"), null).result().get(60, TimeUnit.SECONDS).state());
    }
    assertThrows(IllegalArgumentException.class, () -> TestModel.options().durableDiskBudgetBytes(-1));
  }

  @Test
  void durableNeedsASnapshotDirectory() {
    try (Valet valet = Valet.create(TestModel.options())) {
      assertThrows(ValetException.class, () -> valet.submit(request("x-1"), null));
      assertThrows(ValetException.class, () -> valet.recover(task -> null));
    }
    assertThrows(IllegalArgumentException.class, () -> Request.builder().prompt("p").durableKey("a\0b").build());
    final Request.Builder unnamed = Request.builder().prompt("p").durable(true);
    final Request first = unnamed.build();
    assertTrue(first.durableKey().startsWith("task-"));
    assertFalse(first.durableKey().equals(unnamed.build().durableKey()), "every build() names its task anew");
  }
}
