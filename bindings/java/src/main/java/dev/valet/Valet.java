package dev.valet;

/**
 * valet's priority scheduler for on-device LLM inference, over the C API.
 * Thread-safe. Callbacks arrive on the scheduler's worker thread.
 * {@link #close()} cancels unfinished tasks; each still gets its onDone.
 */
public final class Valet implements AutoCloseable {
  static {
    System.loadLibrary("valet_jni");
  }

  /** What {@link #create} needs; only the model path is required. */
  public static final class Options {
    String modelPath;
    int threads;
    int contextLength;
    long kvCapacityBytes;
    long snapshotRamBytes;
    String snapshotDir;
    String budgetTableJson;
    LifecycleState initialState = LifecycleState.RESUMED;

    public Options(String modelPath) {
      this.modelPath = modelPath;
    }

    public Options threads(int n) {
      threads = n;
      return this;
    }

    public Options contextLength(int n) {
      contextLength = n;
      return this;
    }

    public Options kvCapacityBytes(long n) {
      kvCapacityBytes = n;
      return this;
    }

    public Options snapshotRamBytes(long n) {
      snapshotRamBytes = n;
      return this;
    }

    /** App-private directory for snapshots parked to disk (e.g. Context.getCacheDir()). */
    public Options snapshotDir(String dir) {
      snapshotDir = dir;
      return this;
    }

    /** The governor's budget table, including its "thermal" column, as JSON. */
    public Options budgetTableJson(String json) {
      budgetTableJson = json;
      return this;
    }

    public Options initialState(LifecycleState s) {
      initialState = s;
      return this;
    }
  }

  /** One task's request; {@code prompt} is required. */
  public record Request(String prompt, String systemPrompt, int maxTokens, float temperature, long seed) {
    public Request(String prompt, int maxTokens) {
      this(prompt, null, maxTokens, 0.8f, 0x5eed5eed5eed5eedL);
    }
  }

  private final Object lock = new Object();
  private long handle;

  private Valet(long handle) {
    this.handle = handle;
  }

  /** Loads the model; throws {@link ValetException} with the C API's status and message. */
  public static Valet create(Options o) {
    return new Valet(
        nativeCreate(
            o.modelPath,
            o.threads,
            o.contextLength,
            o.kvCapacityBytes,
            o.snapshotRamBytes,
            o.snapshotDir,
            o.budgetTableJson,
            o.initialState.ordinal()));
  }

  public Task submit(Tier tier, Request request, TokenListener listener) {
    final Task task = new Task(this, tier, listener);
    final long id =
        nativeSubmit(
            live(),
            task,
            tier.ordinal(),
            request.systemPrompt(),
            request.prompt(),
            request.maxTokens(),
            request.temperature(),
            request.seed());
    task.setId(id);
    return task;
  }

  public Task submit(Tier tier, String prompt, int maxTokens, TokenListener listener) {
    return submit(tier, new Request(prompt, maxTokens), listener);
  }

  /** False when the task had already finished. */
  public boolean cancel(Task task) {
    final int status = nativeCancel(live(), task.id());
    if (status == ValetException.INVALID_ARGUMENT) return false;
    check(status);
    return true;
  }

  /** Throws {@link ValetException} (INVALID_ARGUMENT) for an out-of-order event; nothing changes then. */
  public void onLifecycleEvent(LifecycleEvent event) {
    check(nativeLifecycle(live(), event.ordinal()));
  }

  /** PowerManager.THERMAL_STATUS_* (0..6) and getThermalHeadroom() (negative or NaN: unknown). */
  public void onThermalStatus(int status, float headroom) {
    check(nativeThermal(live(), status, headroom));
  }

  public void onThermalStatus(int status) {
    onThermalStatus(status, -1.0f);
  }

  /** ComponentCallbacks2.onTrimMemory(level): frees memory, never cancels. */
  public void onTrimMemory(int level) {
    check(nativeTrimMemory(live(), level));
  }

  /** New KV pool and snapshot-RAM budgets; waits for the worker (not from a listener). */
  public void setMemoryBudgets(long poolBytes, long snapshotRamBytes) {
    check(nativeSetMemoryBudgets(live(), poolBytes, snapshotRamBytes));
  }

  /** Blocks until every task submitted so far has finished (not from a listener). */
  public void waitIdle() {
    check(nativeWaitIdle(live()));
  }

  public Stats stats() {
    return new Stats(nativeStats(live()));
  }

  /** Stops the worker and cancels what is left: their onDone run on this thread. Idempotent. */
  @Override
  public void close() {
    final long h;
    synchronized (lock) {
      h = handle;
      handle = 0;
    }
    if (h != 0) nativeDestroy(h);
  }

  /** JNI global references held for unfinished tasks, process-wide (for leak tests). */
  public static long liveTaskReferences() {
    return nativeLiveTaskRefs();
  }

  /** Exceptions thrown by listeners and dropped, process-wide. */
  public static long droppedListenerExceptions() {
    return nativeListenerExceptions();
  }

  private long live() {
    synchronized (lock) {
      if (handle == 0) throw new IllegalStateException("Valet is closed");
      return handle;
    }
  }

  private static void check(int status) {
    if (status != 0) throw new ValetException(status, nativeLastError());
  }

  private static native long nativeCreate(
      String modelPath,
      int threads,
      int contextLength,
      long kvBytes,
      long snapshotRamBytes,
      String snapshotDir,
      String budgetJson,
      int initialState);

  private static native void nativeDestroy(long handle);

  private static native long nativeSubmit(
      long handle,
      Task task,
      int tier,
      String systemPrompt,
      String prompt,
      int maxTokens,
      float temperature,
      long seed);

  private static native int nativeCancel(long handle, long id);

  private static native int nativeLifecycle(long handle, int event);

  private static native int nativeThermal(long handle, int status, float headroom);

  private static native int nativeTrimMemory(long handle, int level);

  private static native int nativeSetMemoryBudgets(long handle, long pool, long snapshotRam);

  private static native int nativeWaitIdle(long handle);

  private static native long[] nativeStats(long handle);

  private static native String nativeLastError();

  private static native long nativeLiveTaskRefs();

  private static native long nativeListenerExceptions();
}
