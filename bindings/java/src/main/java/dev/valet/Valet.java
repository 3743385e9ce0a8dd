package dev.valet;

import java.io.FileDescriptor;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * valet's priority scheduler for on-device LLM inference, over the C API. Thread-safe: any number
 * of threads may call any method at once, close() included. Callbacks arrive on the scheduler's
 * worker thread ({@link TokenListener}).
 *
 * <p>Close it when done: {@link #close()} stops the work (a running step stops at its next layer),
 * gives every unfinished task its onDone, and frees the model. A Valet dropped without close() is
 * freed by a daemon thread once the garbage collector finds it unreachable; a Valet with unfinished
 * tasks stays reachable through them, so their work is never cut short that way.
 */
public final class Valet implements AutoCloseable {
  /** What {@link #create} needs: the model, by path or by file descriptor; the rest is optional. */
  public static final class Options {
    String modelPath;
    int modelFd = -1;
    long modelOffset;
    long modelLength;
    int threads;
    int contextLength;
    long kvCapacityBytes;
    long snapshotRamBytes;
    String snapshotDir;
    long durableDiskBudgetBytes;
    String budgetTableJson;
    LifecycleState initialState = LifecycleState.RESUMED;

    public Options(String modelPath) {
      if (modelPath == null) throw new NullPointerException("modelPath is null");
      this.modelPath = modelPath;
    }

    private Options(int fd) {
      if (fd < 0) throw new IllegalArgumentException("not an open file descriptor: " + fd);
      modelFd = fd;
    }

    /**
     * The model as an open file: ParcelFileDescriptor.getFd(), or with {@link #range} an
     * uncompressed APK asset (AssetFileDescriptor's descriptor, start offset and length). The
     * caller keeps the descriptor and may close it once {@link #create} returns.
     */
    public static Options fromDescriptor(int fd) {
      return new Options(fd);
    }

    /**
     * The same from a java.io.FileDescriptor (AssetFileDescriptor.getFileDescriptor()). Its int is
     * read from the private field Android calls "descriptor" (OpenJDK: "fd"), a non-SDK interface
     * Android may restrict: prefer {@link #fromDescriptor(int)} with ParcelFileDescriptor.getFd().
     */
    public static Options fromDescriptor(FileDescriptor fd) {
      if (!fd.valid()) throw new IllegalArgumentException("the FileDescriptor is not open");
      return new Options(NativeLib.descriptorOf(fd));
    }

    /**
     * Where the model lies in the descriptor's file: {@code length} bytes from {@code offset};
     * length 0 or -1 (AssetFileDescriptor.UNKNOWN_LENGTH): to the end. An offset that is a multiple
     * of 4 is mapped like a file; any other is read into memory (the model's size in RAM).
     */
    public Options range(long offset, long length) {
      if (modelFd < 0) throw new IllegalStateException("a range applies to a model given by descriptor");
      if (offset < 0 || length < -1) throw new IllegalArgumentException("bad range " + offset + ", " + length);
      modelOffset = offset;
      modelLength = Math.max(length, 0);
      return this;
    }

    /** What error messages call a model given by descriptor (say "model.gguf in the APK"). */
    public Options modelName(String name) {
      modelPath = name;
      return this;
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

    /**
     * App-private directory for snapshots parked to disk and durable tasks' journals: on Android
     * Context.getNoBackupFilesDir(), not getCacheDir(), which Android may clear on low storage.
     */
    public Options snapshotDir(String dir) {
      snapshotDir = dir;
      return this;
    }

    /**
     * The most bytes durable tasks' journals and KV checkpoints may take in the snapshot directory;
     * beyond it submitting a durable task throws (RESOURCE_EXHAUSTED) until finished ones are
     * acknowledged ({@link Valet#ack}). 0: 1 GiB.
     */
    public Options durableDiskBudgetBytes(long n) {
      if (n < 0) throw new IllegalArgumentException("negative budget: " + n);
      durableDiskBudgetBytes = n;
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

  private final NativeScheduler scheduler;
  private final ForgottenValets.Ref forgotten;

  private Valet(long handle) {
    scheduler = new NativeScheduler(handle);
    forgotten = ForgottenValets.track(this, scheduler);
  }

  /** Loads the model; throws {@link ValetException} with the C API's status and message. */
  public static Valet create(Options o) {
    return new Valet(
        NativeLib.create(
            utf8(o.modelPath),
            o.modelFd,
            o.modelOffset,
            o.modelLength,
            o.threads,
            o.contextLength,
            o.kvCapacityBytes,
            o.snapshotRamBytes,
            utf8(o.snapshotDir),
            o.durableDiskBudgetBytes,
            utf8(o.budgetTableJson),
            o.initialState.ordinal()));
  }

  /**
   * Submits a task, rendering and tokenizing its prompt on the calling thread. Throws {@link
   * ValetException} for a request the scheduler refuses (OUT_OF_RANGE for a prompt plus maxTokens
   * over the context), and IllegalStateException once close() has begun. Only a task too large for
   * the KV pool even alone is accepted and then FAILS (RESOURCE_EXHAUSTED).
   */
  public Task submit(Request request, TokenListener listener) {
    final List<Request.Message> messages = request.messages();
    final byte[][] roles = new byte[messages.size()][];
    final byte[][] contents = new byte[messages.size()][];
    for (int i = 0; i < roles.length; ++i) {
      roles[i] = utf8(messages.get(i).role());
      contents[i] = utf8(messages.get(i).content());
    }
    final byte[][] stop = new byte[request.stop().size()][];
    for (int i = 0; i < stop.length; ++i) stop[i] = utf8(request.stop().get(i));
    final Task task = new Task(this, scheduler, request.tier(), listener);
    final long handle = scheduler.acquire();
    try {
      task.setId(
          NativeLib.submit(
              handle,
              task,
              request.tier().ordinal(),
              utf8(request.systemPrompt()),
              roles,
              contents,
              utf8(request.prompt()),
              stop,
              request.maxTokens(),
              request.temperature(),
              request.topK(),
              request.topP(),
              request.minP(),
              request.repeatPenalty(),
              request.seed(),
              request.durable(),
              utf8(request.durableKey())));
    } catch (ValetException e) {
      // Refused because close() stopped the scheduler meanwhile.
      if (scheduler.isClosing()) throw new IllegalStateException("Valet is closed", e);
      throw e;
    } finally {
      scheduler.release();
    }
    return task;
  }

  /** A raw prompt at the given tier with the default sampling. */
  public Task submit(Tier tier, String prompt, int maxTokens, TokenListener listener) {
    return submit(Request.builder().tier(tier).prompt(prompt).maxTokens(maxTokens).build(), listener);
  }

  /**
   * Finds the durable tasks journaled in the snapshot directory (by this model and valet version):
   * each unfinished one is resumed where its journal ends, with the listener {@code listener} gives
   * it (called on the scheduler's thread before the task runs; its {@link RecoveredTask#task()}
   * is the running task), and each ended one is listed for {@link #ack}. ValetException
   * (INVALID_ARGUMENT) without a snapshot directory.
   */
  public List<RecoveredTask> recover(RecoveryListener listener) {
    final Recovery collector = new Recovery(this, scheduler, listener);
    call(h -> {
      NativeLib.recover(h, collector);
      return null;
    });
    return collector.found();
  }

  /** Forgets an ended durable task (removes its journal); false when there is none. */
  public boolean ack(String durableKey) {
    final byte[] key = utf8(durableKey);
    return call(h -> NativeLib.ack(h, key));
  }

  /** False when the task had already finished, or belongs to another Valet. */
  public boolean cancel(Task task) {
    if (!task.belongsTo(this)) return false;
    final long id = task.id();
    return call(h -> NativeLib.cancel(h, id));
  }

  /** Throws {@link ValetException} (INVALID_ARGUMENT) for an out-of-order event; nothing changes then. */
  public void onLifecycleEvent(LifecycleEvent event) {
    run(h -> NativeLib.lifecycle(h, event.ordinal()));
  }

  /** PowerManager.THERMAL_STATUS_* (0..6) and getThermalHeadroom() (negative or NaN: unknown). */
  public void onThermalStatus(int status, float headroom) {
    run(h -> NativeLib.thermal(h, status, headroom));
  }

  public void onThermalStatus(int status) {
    onThermalStatus(status, -1.0f);
  }

  /** ComponentCallbacks2.onTrimMemory(level): frees memory, never cancels. */
  public void onTrimMemory(int level) {
    run(h -> NativeLib.trimMemory(h, level));
  }

  /**
   * New KV pool and snapshot-RAM budgets. Waits for the worker thread (at most one step), so from a
   * listener of this Valet it throws IllegalStateException.
   */
  public void setMemoryBudgets(long poolBytes, long snapshotRamBytes) {
    scheduler.refuseFromCallback("setMemoryBudgets()");
    run(h -> NativeLib.setMemoryBudgets(h, poolBytes, snapshotRamBytes));
  }

  /**
   * Blocks until every task submitted so far has finished, or close() has cancelled it. From a
   * listener of this Valet, which it would wait for, it throws IllegalStateException.
   */
  public void waitIdle() {
    scheduler.refuseFromCallback("waitIdle()");
    run(NativeLib::waitIdle);
  }

  public Stats stats() {
    return new Stats(call(NativeLib::stats));
  }

  /**
   * The token ids a raw prompt becomes (BOS as the model's vocabulary asks, special-token texts
   * parsed), as {@link #submit} feeds them: what {@code valet tokenize} prints.
   */
  public int[] tokenize(String text) {
    if (text == null) throw new NullPointerException("text is null");
    final byte[] bytes = utf8(text);
    return call(h -> NativeLib.tokenize(h, bytes));
  }

  /**
   * Stops the scheduler (a running step stops at its next layer boundary, waitIdle() returns, and
   * every unfinished task gets onDone on this thread, CANCELLED with {@link ValetException#ABORTED}),
   * waits for calls other threads are making on it, then frees the model. Idempotent and safe from
   * any number of threads at once; every call after it throws IllegalStateException.
   *
   * @throws IllegalStateException when called from a listener of this Valet (including an onDone
   *     that close() itself delivers), whose thread close() would have to wait for; close it from
   *     another thread
   */
  @Override
  public void close() {
    scheduler.close();
    ForgottenValets.untrack(forgotten);
  }

  /**
   * Where valet reports what it cannot throw (a listener's exception, a failed callback delivery),
   * process-wide; null restores the default, Android's log (tag "valet") or stderr.
   */
  public static void setLogHandler(LogHandler handler) {
    ValetLog.setHandler(handler);
  }

  /** JNI global references held for unfinished tasks, process-wide (for leak tests). */
  public static long liveTaskReferences() {
    return NativeLib.liveTaskRefs();
  }

  /** Exceptions thrown by listeners and dropped, process-wide. */
  public static long droppedListenerExceptions() {
    return ValetLog.droppedListenerExceptions();
  }

  /** Native schedulers created and not yet freed, process-wide (for leak tests). */
  static long liveNativeSchedulers() {
    return NativeLib.liveSchedulers();
  }

  private interface NativeCall<T> {
    T on(long handle);
  }

  private interface NativeAction {
    void on(long handle);
  }

  private <T> T call(NativeCall<T> body) {
    final long handle = scheduler.acquire();
    try {
      return body.on(handle);
    } finally {
      scheduler.release();
    }
  }

  private void run(NativeAction body) {
    call(
        h -> {
          body.on(h);
          return null;
        });
  }

  private static byte[] utf8(String s) {
    return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
  }
}
