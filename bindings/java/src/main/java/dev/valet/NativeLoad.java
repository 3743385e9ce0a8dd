package dev.valet;

import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

/**
 * A {@link Valet#createAsync} in flight: valet's loading thread reports to it (the JNI calls its
 * onNative methods), and it hands each report to the app's executor in order, one at a time, so
 * that no listener holds the load. cancel() asks the native load to stop; a Valet that finished
 * loading first is closed.
 */
final class NativeLoad extends CompletableFuture<Valet> {
  private final Executor executor;
  private final Executor callbackExecutor;
  private final LoadListener listener;
  private final ArrayDeque<Runnable> queue = new ArrayDeque<>();
  private boolean draining;
  private long handle; // the native load, valid until it ended
  private boolean ended;

  private NativeLoad(Executor executor, Executor callbackExecutor, LoadListener listener) {
    this.executor = executor;
    this.callbackExecutor = callbackExecutor;
    this.listener = listener;
  }

  static NativeLoad start(Valet.Options o, Executor executor, LoadListener listener) {
    final NativeLoad load = new NativeLoad(executor, o.callbackExecutor, listener);
    final long h =
        NativeLib.createAsync(
            Valet.utf8(o.modelPath, "the model path"),
            o.modelFd,
            o.modelOffset,
            o.modelLength,
            o.threads,
            o.contextLength,
            o.kvCapacityBytes,
            o.snapshotRamBytes,
            Valet.utf8(o.snapshotDir, "the snapshot directory"),
            o.durableDiskBudgetBytes,
            Valet.utf8(o.weightsCache, "the weights cache path"),
            o.weightsCacheBudgetBytes,
            Valet.utf8(o.budgetTableJson, "the budget table"),
            o.initialState.ordinal(),
            load);
    synchronized (load) {
      if (!load.ended) load.handle = h;
    }
    return load;
  }

  @Override
  public boolean cancel(boolean mayInterruptIfRunning) {
    synchronized (this) {
      if (!ended && handle != 0) NativeLib.loadCancel(handle);
    }
    return super.cancel(mayInterruptIfRunning);
  }

  /** On valet's loading thread. */
  void onNativeProgress(int stage, long done, long total) {
    if (listener == null) return;
    final LoadStage s = LoadStage.values()[stage];
    post(() -> listener.onProgress(s, done, total));
  }

  /** On valet's loading thread, once; the native load is freed when this returns. */
  void onNativeDone(long scheduler, int status, byte[] message) {
    synchronized (this) {
      ended = true;
      handle = 0;
    }
    post(
        () -> {
          if (scheduler == 0) {
            completeExceptionally(new ValetException(status, message));
            return;
          }
          final Valet valet = new Valet(scheduler, callbackExecutor);
          if (!complete(valet)) valet.close(); // cancelled meanwhile
        });
  }

  private void post(Runnable event) {
    final boolean start;
    synchronized (queue) {
      queue.add(event);
      start = !draining;
      draining = true;
    }
    if (!start) return;
    try {
      executor.execute(this::drain);
    } catch (RejectedExecutionException e) {
      ValetLog.log(LogHandler.WARN, "the executor refused createAsync's callbacks; they run on valet's thread", e);
      drain();
    }
  }

  private void drain() {
    while (true) {
      final Runnable next;
      synchronized (queue) {
        next = queue.poll();
        if (next == null) {
          draining = false;
          return;
        }
      }
      try {
        next.run();
      } catch (RuntimeException e) {
        ValetLog.log(LogHandler.WARN, "a LoadListener threw", e);
      }
    }
  }
}
