package dev.valet;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * One native valet_scheduler and the rule that keeps every call on it safe: a call counts itself
 * in flight under the lock before it reads the handle, and close() frees the handle only once no
 * call is in flight. It is what {@link ForgottenValets} closes when a Valet is collected, so it
 * must never refer to the Valet.
 */
final class NativeScheduler {
  // The schedulers whose listener is running on this thread, innermost last: a listener of one
  // Valet may run inside another's (an onDone that closes another Valet, say).
  private static final ThreadLocal<ArrayList<NativeScheduler>> callbacks =
      ThreadLocal.withInitial(ArrayList::new);

  private final Object lock = new Object();
  private long handle;
  private int inFlight;
  private boolean closing;
  private final CompletableFuture<Void> freed = new CompletableFuture<>();
  // Tasks delivering on an app's executor, woken when closing (weak: a finished task goes).
  private final Set<SerialDelivery> deliveries = Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>()));

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

  /** Like acquire(), but 0 instead of an exception once closing. */
  long tryAcquire() {
    synchronized (lock) {
      if (closing) return 0;
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

  /** Completes once the native scheduler has been freed. */
  CompletableFuture<Void> freed() {
    return freed;
  }

  SerialDelivery newDelivery(Executor executor) {
    final SerialDelivery d = new SerialDelivery(executor, this);
    deliveries.add(d);
    return d;
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
   * end), waits for the calls in flight, then frees it. From a listener of this Valet, whose own
   * delivery the stop would wait for, the rest is left to a thread of its own and close() returns
   * at once; {@link #freed()} says when it is done. Idempotent; a concurrent call from elsewhere
   * returns once the first has freed it.
   */
  void close() {
    final boolean fromListener = callbacks.get().contains(this);
    final boolean first;
    synchronized (lock) {
      first = !closing;
      closing = true;
    }
    if (!first) {
      if (!fromListener) freed.join();
      return;
    }
    final SerialDelivery[] waiting;
    synchronized (deliveries) {
      waiting = deliveries.toArray(new SerialDelivery[0]);
    }
    for (SerialDelivery d : waiting) d.wake();
    if (fromListener) {
      final Thread closer = new Thread(this::stopAndFree, "valet-close");
      closer.setDaemon(true);
      closer.start();
      return;
    }
    stopAndFree();
  }

  private void stopAndFree() {
    final long h;
    synchronized (lock) {
      h = handle;
    }
    try {
      NativeLib.stop(h);
    } finally {
      synchronized (lock) {
        while (inFlight > 0) waitUninterruptibly();
        NativeLib.destroy(h);
        handle = 0;
      }
      freed.complete(null);
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
