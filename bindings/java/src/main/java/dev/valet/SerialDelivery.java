package dev.valet;

import java.util.ArrayDeque;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

/**
 * One task's callbacks on the app's {@link Executor}: in order, one at a time, however many
 * threads the executor has. At most {@link #MAX_QUEUED} wait; the native delivery thread that
 * brings one more waits for room, so a consumer that falls behind parks its own task natively
 * (valet.h's backpressure) instead of queueing without bound. Once the Valet is closing nobody
 * waits: close() on the executor's own thread (Android's main thread, say) must not wait for a
 * delivery that waits for it.
 */
final class SerialDelivery {
  static final int MAX_QUEUED = 16;

  private final Executor executor;
  private final NativeScheduler scheduler;
  private final ArrayDeque<Runnable> queue = new ArrayDeque<>();
  private boolean draining;

  SerialDelivery(Executor executor, NativeScheduler scheduler) {
    this.executor = executor;
    this.scheduler = scheduler;
  }

  /** On a native delivery thread. */
  void post(Runnable event) {
    final boolean start;
    synchronized (this) {
      while (queue.size() >= MAX_QUEUED && !scheduler.isClosing()) waitUninterruptibly();
      queue.add(event);
      start = !draining;
      draining = true;
    }
    if (!start) return;
    try {
      executor.execute(this::drain);
    } catch (RejectedExecutionException e) {
      ValetLog.log(LogHandler.WARN, "the callback executor refused a task's callbacks; they run on valet's thread", e);
      drain();
    }
  }

  /** The Valet began closing: posters stop waiting for room. */
  synchronized void wake() {
    notifyAll();
  }

  private void drain() {
    while (true) {
      final Runnable next;
      synchronized (this) {
        next = queue.poll();
        if (next == null) {
          draining = false;
          return;
        }
        notifyAll();
      }
      next.run();
    }
  }

  // Delivery threads are valet's own: an interrupt is kept for whoever looks later.
  private void waitUninterruptibly() {
    boolean interrupted = false;
    while (true) {
      try {
        wait();
        break;
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) Thread.currentThread().interrupt();
  }
}
