package dev.valet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

/** The native library's warnings reach the app's LogHandler, on valet's logger thread. */
class NativeLogTest {
  /** What the handler got for one expected message. */
  static final class Seen {
    final String part;
    final CountDownLatch arrived = new CountDownLatch(1);
    volatile int priority;
    volatile String message;
    volatile Throwable error;
    volatile Thread thread;

    Seen(String part) {
      this.part = part;
    }

    void offer(int priority, String message, Throwable error) {
      if (!message.contains(part) || arrived.getCount() == 0) return;
      this.priority = priority;
      this.message = message;
      this.error = error;
      this.thread = Thread.currentThread();
      arrived.countDown();
    }
  }

  @Test
  void aSnapshotDirectoryThatCannotExistIsReportedToTheHandler() throws Exception {
    final String dir = "/dev/null/valet-java-log-test";
    final Seen unusable = new Seen("snapshot directory " + dir + " is unusable");
    // The model load's calibration writes to that directory too: the last warning it logs.
    final Seen diskFailed = new Seen("snapshot to disk failed");
    Valet.setLogHandler(
        (priority, message, error) -> {
          unusable.offer(priority, message, error);
          diskFailed.offer(priority, message, error);
        });
    try {
      Valet.create(TestModel.options().snapshotDir(dir)).close();
      unusable.arrived.await();
      diskFailed.arrived.await();
    } finally {
      Valet.setLogHandler(null);
    }
    for (Seen s : new Seen[] {unusable, diskFailed}) {
      assertEquals(LogHandler.WARN, s.priority, s.message);
      assertNull(s.error);
      assertNotEquals(Thread.currentThread(), s.thread);
      assertEquals("valet-log", s.thread.getName());
    }
  }
}
