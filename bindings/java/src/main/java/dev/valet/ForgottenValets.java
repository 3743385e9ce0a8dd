package dev.valet;

import java.lang.ref.PhantomReference;
import java.lang.ref.ReferenceQueue;
import java.util.Collections;
import java.util.HashSet;
import java.util.Set;

/**
 * Frees the native scheduler of a {@link Valet} the app dropped without closing, on a daemon thread,
 * once the garbage collector finds the Valet unreachable (java.lang.ref.Cleaner would do this, but
 * Android has it only from API 33). A Valet with unfinished tasks stays reachable through them.
 */
final class ForgottenValets {
  private static final ReferenceQueue<Valet> queue = new ReferenceQueue<>();
  // A PhantomReference must itself stay reachable until it is enqueued.
  private static final Set<Ref> tracked = Collections.synchronizedSet(new HashSet<>());
  private static final Object freedLock = new Object();
  private static long freed;
  private static Thread daemon;

  private ForgottenValets() {}

  static final class Ref extends PhantomReference<Valet> {
    final NativeScheduler scheduler;

    Ref(Valet valet, NativeScheduler scheduler) {
      super(valet, queue);
      this.scheduler = scheduler;
    }
  }

  static synchronized Ref track(Valet valet, NativeScheduler scheduler) {
    if (daemon == null) {
      daemon = new Thread(ForgottenValets::run, "valet-forgotten");
      daemon.setDaemon(true);
      daemon.start();
    }
    final Ref ref = new Ref(valet, scheduler);
    tracked.add(ref);
    return ref;
  }

  /** The Valet was closed: nothing is left for the daemon to do. */
  static void untrack(Ref ref) {
    tracked.remove(ref);
    ref.clear();
  }

  /** Waits up to timeoutMillis for the daemon to have freed at least count Valets (tests). */
  static boolean awaitFreed(long count, long timeoutMillis) throws InterruptedException {
    synchronized (freedLock) {
      if (freed < count) freedLock.wait(timeoutMillis);
      return freed >= count;
    }
  }

  static long freedCount() {
    synchronized (freedLock) {
      return freed;
    }
  }

  private static void run() {
    while (true) {
      final Ref ref;
      try {
        ref = (Ref) queue.remove();
      } catch (InterruptedException e) {
        continue;  // a daemon: it ends with the process
      }
      tracked.remove(ref);
      try {
        ref.scheduler.close();
        ValetLog.log(LogHandler.WARN, "a Valet was never closed; freed once the garbage collector found it unreachable", null);
      } catch (Throwable t) {
        ValetLog.log(LogHandler.ERROR, "freeing a Valet that was never closed failed", t);
      }
      synchronized (freedLock) {
        ++freed;
        freedLock.notifyAll();
      }
    }
  }
}
