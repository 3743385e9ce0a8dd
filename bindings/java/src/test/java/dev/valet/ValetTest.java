package dev.valet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import androidx.lifecycle.Lifecycle;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The binding against the real engine and a small shared model (skipped without it). */
class ValetTest {
  private static final int THERMAL_NONE = 0;
  private static final int THERMAL_EMERGENCY = 5;
  private static final int TRIM_MEMORY_COMPLETE = 80;

  private Valet valet;

  @BeforeEach
  void open() {
    valet = Valet.create(TestModel.options());
  }

  @AfterEach
  void close() {
    if (valet != null) valet.close();
    assertEquals(0, Valet.liveTaskReferences());
  }

  /** Records what a task's listener saw, and on which threads. */
  static class Recorder implements TokenListener {
    final StringBuilder text = new StringBuilder();
    final AtomicInteger tokens = new AtomicInteger();
    final AtomicInteger doneCalls = new AtomicInteger();
    final Set<Thread> threads = ConcurrentHashMap.newKeySet();
    final CountDownLatch firstToken = new CountDownLatch(1);
    volatile TaskResult result;

    @Override
    public void onToken(Task task, int token, String piece) {
      threads.add(Thread.currentThread());
      synchronized (text) {
        text.append(piece);
      }
      tokens.incrementAndGet();
      firstToken.countDown();
    }

    @Override
    public void onDone(Task task, TaskResult r) {
      threads.add(Thread.currentThread());
      result = r;
      doneCalls.incrementAndGet();
    }
  }

  @Test
  void tokensArriveOnAWorkerThreadAndTheResultCarriesMetrics() throws Exception {
    final Recorder rec = new Recorder();
    final Task task = valet.submit(Tier.FOREGROUND_CHAT, "Once upon a time", 12, rec);
    final TaskResult r = task.result().get();
    assertEquals(TaskState.DONE, r.state());
    assertEquals(1, rec.doneCalls.get());
    assertEquals(rec.tokens.get(), r.tokens());
    assertTrue(r.tokens() > 0);
    assertTrue(r.ttftSeconds() >= 0 && r.e2eSeconds() >= r.ttftSeconds());
    assertTrue(r.promptTokens() > 0);
    assertFalse(rec.threads.contains(Thread.currentThread()));
    valet.waitIdle();
    final Stats s = valet.stats();
    assertEquals(1, s.tier(Tier.FOREGROUND_CHAT).done());
    assertEquals(r.tokens(), s.tier(Tier.FOREGROUND_CHAT).generatedTokens());
    assertTrue(s.poolCapacityBytes > 0 && s.poolUsedBytes <= s.poolCapacityBytes);
  }

  @Test
  void badRequestsAndEventsAreClearErrors() {
    final ValetException e =
        assertThrows(ValetException.class, () -> valet.submit(Tier.OFFLINE_INDEXING, "x", -1, null));
    assertEquals(ValetException.INVALID_ARGUMENT, e.status());
    assertThrows(ValetException.class, () -> valet.onLifecycleEvent(LifecycleEvent.ON_START)); // RESUMED
    assertThrows(ValetException.class, () -> valet.onThermalStatus(7));
    assertThrows(ValetException.class, () -> valet.onTrimMemory(3));
    assertEquals(LifecycleState.RESUMED, valet.stats().lifecycle);
    valet.close();
    assertThrows(IllegalStateException.class, () -> valet.stats());
    valet.close(); // idempotent
  }

  @Test
  void cancelEndsATaskOnceAndOnlyOnce() throws Exception {
    valet.onThermalStatus(THERMAL_EMERGENCY); // background is held: surely unfinished
    final Recorder rec = new Recorder();
    final Task task = valet.submit(Tier.OFFLINE_INDEXING, "A long document", 50, rec);
    assertTrue(task.cancel());
    final TaskResult r = task.result().get();
    assertEquals(TaskState.CANCELLED, r.state());
    assertEquals(0, r.status());
    assertFalse(task.cancel());
    assertEquals(1, rec.doneCalls.get());
  }

  @Test
  void lifecycleObserverDrivenLikeProcessLifecycleOwner() {
    final FakeProcessLifecycleOwner owner = new FakeProcessLifecycleOwner();
    owner.activityStarted();
    owner.activityResumed();
    // Added while the app is in the foreground: ON_CREATE, ON_START, ON_RESUME.
    final ValetLifecycleObserver observer = new ValetLifecycleObserver(valet);
    owner.getLifecycle().addObserver(observer);
    assertEquals(LifecycleState.RESUMED, valet.stats().lifecycle);
    // A rotation: the new activity resumes inside the delay, nothing is sent.
    owner.activityPaused();
    owner.activityStopped();
    owner.activityStarted();
    owner.activityResumed();
    owner.delayElapsed();
    assertEquals(LifecycleState.RESUMED, valet.stats().lifecycle);
    // Home: pause and stop arrive together once the delay elapses.
    owner.activityPaused();
    owner.activityStopped();
    assertEquals(LifecycleState.RESUMED, valet.stats().lifecycle);
    owner.delayElapsed();
    assertEquals(LifecycleState.CREATED, valet.stats().lifecycle);
    // Back, with a second activity on top of the first, then a dialog-like pause.
    owner.activityStarted();
    owner.activityResumed();
    owner.activityStarted();
    owner.activityPaused();
    owner.activityResumed();
    owner.activityPaused();
    owner.delayElapsed();
    assertEquals(LifecycleState.STARTED, valet.stats().lifecycle);
    assertEquals(Lifecycle.State.STARTED, owner.getCurrentState());
    assertEquals(0, observer.refusedEvents(), observer.lastError());
    // A repeated event (which androidx would not send) is refused, not thrown.
    observer.onPause(owner);
    assertEquals(1, observer.refusedEvents());
    assertEquals(LifecycleState.STARTED, valet.stats().lifecycle);
  }

  @Test
  void trimMemoryWhileATaskIsParkedNeverCancelsIt() throws Exception {
    final CountDownLatch eventsSent = new CountDownLatch(1);
    // The first token's callback holds the worker until the events are queued,
    // so the heat parks the task before its second token, whatever the timing.
    final Recorder rec =
        new Recorder() {
          @Override
          public void onToken(Task task, int token, String piece) {
            super.onToken(task, token, piece);
            if (tokens.get() == 1) awaitUninterruptibly(eventsSent);
          }
        };
    final Task task = valet.submit(Tier.BACKGROUND_SUMMARY, "Once upon a time, in a forest", 60, rec);
    rec.firstToken.await();
    valet.onThermalStatus(THERMAL_EMERGENCY); // parks it (never cancels)
    valet.onTrimMemory(TRIM_MEMORY_COMPLETE);
    eventsSent.countDown();
    final Recorder chat = new Recorder();
    valet.submit(Tier.FOREGROUND_CHAT, "Hello", 4, chat).result().get();
    valet.onThermalStatus(THERMAL_NONE);
    final TaskResult r = task.result().get();
    assertEquals(TaskState.DONE, r.state());
    assertTrue(r.parks() > 0, "parks " + r.parks());
    assertTrue(r.tokens() > 1);
    assertEquals(rec.tokens.get(), r.tokens());
    assertEquals(0, valet.stats().cancelled);
  }

  static void awaitUninterruptibly(CountDownLatch latch) {
    while (true) {
      try {
        latch.await();
        return;
      } catch (InterruptedException e) {
        // the worker thread is never interrupted; keep waiting
      }
    }
  }

  @Test
  void closeWithTasksInFlightCallsEveryOnDoneAndReleasesEveryReference() {
    valet.onThermalStatus(THERMAL_EMERGENCY); // only the chat tier may run
    final List<Recorder> recs = new ArrayList<>();
    final List<Task> tasks = new ArrayList<>();
    for (int i = 0; i < 12; ++i) {
      final Recorder rec = new Recorder();
      recs.add(rec);
      tasks.add(valet.submit(Tier.values()[i % 4], "Story number " + i, 80, rec));
    }
    assertTrue(Valet.liveTaskReferences() > 0);
    valet.close();
    int aborted = 0;
    for (int i = 0; i < tasks.size(); ++i) {
      assertEquals(1, recs.get(i).doneCalls.get(), "task " + i);
      assertTrue(tasks.get(i).result().isDone());
      final TaskResult r = recs.get(i).result;
      if (r.aborted()) {
        ++aborted;
        assertEquals("scheduler stopped", r.message());
      } else {
        assertEquals(TaskState.DONE, r.state());
      }
    }
    assertTrue(aborted >= 9, "aborted " + aborted);
    assertEquals(0, Valet.liveTaskReferences());
  }

  /** What a LogHandler was given. */
  static final class LogRecord {
    final int priority;
    final String message;
    final Throwable error;

    LogRecord(int priority, String message, Throwable error) {
      this.priority = priority;
      this.message = message;
      this.error = error;
    }
  }

  @Test
  void aThrowingListenersExceptionReachesTheLogHandlerWithItsStackTrace() throws Exception {
    final List<LogRecord> logged = new ArrayList<>();
    Valet.setLogHandler(
        (priority, message, error) -> {
          synchronized (logged) {
            logged.add(new LogRecord(priority, message, error));
          }
        });
    try {
      final long before = Valet.droppedListenerExceptions();
      final Task task =
          valet.submit(
              Tier.INLINE_SUGGESTION,
              "Once",
              3,
              (t, token, text) -> {
                throw new IllegalStateException("listener bug");
              });
      final TaskResult r = task.result().get();
      assertEquals(TaskState.DONE, r.state());
      assertEquals(before + r.tokens(), Valet.droppedListenerExceptions());
      synchronized (logged) {
        assertEquals(r.tokens(), logged.size());
        final LogRecord first = logged.get(0);
        assertEquals(LogHandler.WARN, first.priority);
        assertTrue(first.message.contains("task " + task.id() + " threw from onToken"), first.message);
        assertEquals("listener bug", first.error.getMessage());
        boolean fromThisTest = false;
        for (StackTraceElement e : first.error.getStackTrace()) {
          fromThisTest |= e.getClassName().startsWith(ValetTest.class.getName());
        }
        assertTrue(fromThisTest, "the stack trace leads to the listener");
      }
    } finally {
      Valet.setLogHandler(null);
    }
  }
}
