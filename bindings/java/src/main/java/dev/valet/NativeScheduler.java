package dev.valet;

import java.util.ArrayList;

/**
 * One native valet_scheduler and the rule that keeps every call on it safe: a call counts itself
 * in flight under the lock before it reads the handle, and close() frees the handle only once no
 * call is in flight. It is what {@link ForgottenValets} closes when a Valet is collected, so it
 * must never refer to the Valet.
 */
final class NativeScheduler {
  // The schedulers whose callback is running on this thread, innermost last: during close() the
  // unfinished tasks' onDone run on the closing thread, whose listeners may close another Valet.
  private static final ThreadLocal<ArrayList<NativeScheduler>> callbacks =
      ThreadLocal.withInitial(ArrayList::new);

  private final Object lock = new Object();
  private long handle;
  private int inFlight;
  private boolean closing;
  private boolean freed;

  NativeScheduler(long handle) {
    this.handle = handle;
  }

  /** The handle, counted in flight until {@link #release()}; IllegalStateException once closing. */
  long acquire() {
    synchronized (lock) {
      if (closing) throw new IllegalStateException("Valet is closed");
      ++inFlight;
      return handle;
    }
  }

  void release() {
    synchronized (lock) {
      if (--inFlight == 0) lock.notifyAll();
    }
  }

  boolean isClosing() {
    synchronized (lock) {
      return closing;
    }
  }

  void enterCallback() {
    callbacks.get().add(this);
  }

  void exitCallback() {
    final ArrayList<NativeScheduler> running = callbacks.get();
    running.remove(running.size() - 1);
  }

  /** For calls that wait for the scheduler, which would wait for the listener's own thread. */
  void refuseFromCallback(String call) {
    if (callbacks.get().contains(this)) {
      throw new IllegalStateException(
          call + " called from a listener of this Valet: it would wait for the listener's own thread");
    }
  }

  /**
   * Stops the scheduler (its running step stops at the next layer, waiters wake, unfinished tasks
   * get onDone on this thread), waits for the calls in flight, then frees it. Idempotent; a
   * concurrent call returns once the first has freed it.
   */
  void close() {
    refuseFromCallback("close()");
    final long h;
    synchronized (lock) {
      if (closing) {
        while (!freed) waitUninterruptibly();
        return;
      }
      closing = true;
      h = handle;
    }
    try {
      NativeLib.stop(h);
    } finally {
      synchronized (lock) {
        while (inFlight > 0) waitUninterruptibly();
        NativeLib.destroy(h);
        handle = 0;
        freed = true;
        lock.notifyAll();
      }
    }
  }

  // Holds the lock. A close() half done cannot be abandoned, so an interrupt is kept for later.
  private void waitUninterruptibly() {
    boolean interrupted = false;
    while (true) {
      try {
        lock.wait();
        break;
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) Thread.currentThread().interrupt();
  }
}
