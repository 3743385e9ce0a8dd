package dev.valet;

import java.io.FileDescriptor;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * valet's priority scheduler for on-device LLM inference, over the C API. Thread-safe: any number
 * of threads may call any method at once, close() included. Callbacks arrive on valet's delivery
 * threads, or on the {@link Options#callbackExecutor executor} the app gives ({@link
 * TokenListener}); never on the thread that runs the model, so a slow listener holds back only its
 * own task.
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
    String weightsCache;
    long weightsCacheBudgetBytes;
    String budgetTableJson;
    LifecycleState initialState = LifecycleState.RESUMED;
    Executor callbackExecutor;

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

    /**
     * The context per sequence (0: the model's). A durable task resumes only under the context it
     * began with.
     */
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
     * It and its tasks/ are created 0700 if missing; {@link Valet#create} throws
     * (INVALID_ARGUMENT) if either is a symbolic link, another user's or writable by others (the
     * app's own group, as Android's 0771 app directories have, is fine).
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

    /**
     * Packed weights as a file, which later starts map read-only instead of repacking every
     * quantized matrix into anonymous memory: faster to start, and pages Android drops under
     * pressure instead of counting them against the app. A directory (the file in it is named for
     * the model; created 0700 and checked like the snapshot directory) or a file, made by {@link
     * Valet#create} when missing, stale or damaged. null (the default): {@code
     * <snapshotDir>/weights/} with a snapshot directory, else none; "": none.
     */
    public Options weightsCache(String path) {
      weightsCache = path;
      return this;
    }

    /**
     * The most the weights cache's directory may hold: older caches of other models are removed to
     * make room, and a cache that still does not fit is not written. 0: 8 GiB.
     */
    public Options weightsCacheBudgetBytes(long n) {
      if (n < 0) throw new IllegalArgumentException("negative budget: " + n);
      weightsCacheBudgetBytes = n;
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

    /**
     * Where listeners and the result futures' completions run for tasks submitted without an
     * executor of their own: each task's callbacks in order, one at a time, whatever the executor's
     * threads (Android: ContextCompat.getMainExecutor(context) for UI updates). A task whose
     * listener falls behind is parked until it catches up; the other tasks go on. null (the
     * default): on valet's delivery threads.
     */
    public Options callbackExecutor(Executor executor) {
      callbackExecutor = executor;
      return this;
    }
  }

  private final NativeScheduler scheduler;
  private final ForgottenValets.Ref forgotten;
  private final Executor callbackExecutor;

  Valet(long handle, Executor callbackExecutor) {
    scheduler = new NativeScheduler(handle);
    forgotten = ForgottenValets.track(this, scheduler);
    this.callbackExecutor = callbackExecutor;
  }

  /** Removes the weights caches at {@code path} ({@link Options#weightsCache}): the file, or every
   * cache in the directory. Nothing there is not an error. */
  public static void removeWeightsCache(String path) {
    if (path == null) throw new NullPointerException("path is null");
    NativeLib.removeWeightsCache(utf8(path, "the weights cache path"));
  }

  /**
   * Loads the model on valet's own thread and completes the future with the Valet on {@code
   * executor} (Android: the main executor; the caller's thread is never held). It fails with
   * {@link ValetException} as {@link #create} would throw; {@code cancel()} stops the load at its
   * next check (between stages and packed matrices), and a Valet that finished loading first is
   * closed. A params set valet cannot read at all throws here.
   */
  public static CompletableFuture<Valet> createAsync(Options o, Executor executor) {
    return createAsync(o, executor, null);
  }

  /** The same, with the load's progress on {@code executor}, in order, before the completion. */
  public static CompletableFuture<Valet> createAsync(Options o, Executor executor, LoadListener listener) {
    if (executor == null) throw new NullPointerException("executor is null");
    return NativeLoad.start(o, executor, listener);
  }

  /** Loads the model; throws {@link ValetException} with the C API's status and message. */
  public static Valet create(Options o) {
    return new Valet(
        NativeLib.create(
            utf8(o.modelPath, "the model path"),
            o.modelFd,
            o.modelOffset,
            o.modelLength,
            o.threads,
            o.contextLength,
            o.kvCapacityBytes,
            o.snapshotRamBytes,
            utf8(o.snapshotDir, "the snapshot directory"),
            o.durableDiskBudgetBytes,
            utf8(o.weightsCache, "the weights cache path"),
            o.weightsCacheBudgetBytes,
            utf8(o.budgetTableJson, "the budget table"),
            o.initialState.ordinal()),
        o.callbackExecutor);
  }

  /**
   * Submits a task, rendering and tokenizing its prompt on the calling thread. Throws {@link
   * ValetException} for a request the scheduler refuses (OUT_OF_RANGE for a prompt plus maxTokens
   * over the context), IllegalArgumentException for text that is not valid UTF-16 (a lone
   * surrogate), and IllegalStateException once close() has begun. Only a task too large for the KV
   * pool even alone is accepted and then FAILS (RESOURCE_EXHAUSTED). The listener runs on the
   * Valet's {@link Options#callbackExecutor executor}, if it has one.
   */
  public Task submit(Request request, TokenListener listener) {
    return submit(request, listener, callbackExecutor);
  }

  /**
   * The same with the listener and the result future's completion on {@code executor} (null: on
   * valet's delivery threads), in order, one at a time.
   */
  public Task submit(Request request, TokenListener listener, Executor executor) {
    final List<Request.Message> messages = request.messages();
    final byte[][] roles = new byte[messages.size()][];
    final byte[][] contents = new byte[messages.size()][];
    for (int i = 0; i < roles.length; ++i) {
      roles[i] = utf8(messages.get(i).role(), "message " + i + "'s role");
      contents[i] = utf8(messages.get(i).content(), "message " + i + "'s content");
    }
    final byte[][] stop = new byte[request.stop().size()][];
    for (int i = 0; i < stop.length; ++i) stop[i] = utf8(request.stop().get(i), "stop string " + i);
    final byte[] systemPrompt = utf8(request.systemPrompt(), "the system prompt");
    final byte[] prompt = utf8(request.prompt(), "the prompt");
    final byte[] durableKey = utf8(request.durableKey(), "the durable key");
    final byte[] constraintText = utf8(request.constraintText(), "the constraint");
    // Tools as (name, description, parameters) triples, a message's calls as (id, name, arguments)
    // triples after its count; an absent text is empty.
    final List<Request.Tool> offered = request.tools();
    final byte[][] tools = new byte[3 * offered.size()][];
    for (int i = 0; i < offered.size(); ++i) {
      final Request.Tool t = offered.get(i);
      tools[3 * i] = utf8(t.name(), "tool " + i + "'s name");
      tools[3 * i + 1] = utf8OrEmpty(t.description(), "tool " + i + "'s description");
      tools[3 * i + 2] = utf8OrEmpty(t.parameters(), "tool " + i + "'s parameters");
    }
    final byte[][] toolCallIds = new byte[messages.size()][];
    final int[] callCounts = new int[messages.size()];
    final List<byte[]> calls = new ArrayList<>();
    for (int i = 0; i < messages.size(); ++i) {
      final Request.Message m = messages.get(i);
      toolCallIds[i] = utf8OrEmpty(m.toolCallId(), "message " + i + "'s tool call id");
      callCounts[i] = m.toolCalls().size();
      for (ToolCall c : m.toolCalls()) {
        calls.add(utf8(c.id(), "message " + i + "'s tool call id"));
        calls.add(utf8(c.name(), "message " + i + "'s tool call name"));
        calls.add(utf8(c.arguments(), "message " + i + "'s tool call arguments"));
      }
    }
    final Task task = new Task(this, scheduler, request.tier(), listener, deliveryOn(executor));
    final long handle = scheduler.acquire();
    try {
      task.setId(
          NativeLib.submit(
              handle,
              task,
              request.tier().ordinal(),
              systemPrompt,
              roles,
              contents,
              prompt,
              stop,
              request.maxTokens(),
              request.temperature(),
              request.topK(),
              request.topP(),
              request.minP(),
              request.repeatPenalty(),
              request.seed(),
              request.durable(),
              durableKey,
              request.constraint().ordinal(),
              constraintText,
              request.maxWhitespace(),
              tools,
              request.toolChoice().ordinal(),
              utf8(request.toolChoiceName(), "the tool choice"),
              request.parallelToolCalls(),
              toolCallIds,
              callCounts,
              calls.toArray(new byte[0][])));
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
   * it (called on this thread; none of the task's callbacks comes before; its {@link
   * RecoveredTask#task()} is the running task), and each ended one is listed for {@link #ack}. ValetException
   * (INVALID_ARGUMENT) without a snapshot directory.
   */
  public List<RecoveredTask> recover(RecoveryListener listener) {
    final Recovery collector = new Recovery(this, scheduler, listener, callbackExecutor);
    call(h -> {
      NativeLib.recover(h, collector);
      return null;
    });
    return collector.found();
  }

  /**
   * Writes again what durable tasks' journals could not take (a full or failing disk, {@link
   * ParkCause#JOURNAL_IO}): each task whose journal now takes it goes on. Also tried on every
   * lifecycle event and whenever another durable write succeeds; never on a timer.
   */
  public void retryJournals() {
    run(NativeLib::retryJournals);
  }

  /** The task's state and, when parked, why. ValetException (NOT_FOUND) long after it ended. */
  public TaskInfo info(Task task) {
    if (!task.belongsTo(this)) throw new IllegalArgumentException("the task belongs to another Valet");
    final long id = task.id();
    final int[] info = call(h -> NativeLib.taskInfo(h, id));
    return new TaskInfo(TaskState.of(info[0]), ParkCause.of(info[1]));
  }

  /** Forgets an ended durable task (removes its journal); false when there is none. */
  public boolean ack(String durableKey) {
    final byte[] key = utf8(durableKey, "the durable key");
    return call(h -> NativeLib.ack(h, key));
  }

  /**
   * True exactly when the task ends CANCELLED; false when it had already finished (or was finishing:
   * its end and this cancel are settled under one lock), or belongs to another Valet.
   */
  public boolean cancel(Task task) {
    if (!task.belongsTo(this)) return false;
    final long id = task.id();
    return call(h -> NativeLib.cancel(h, id));
  }

  /**
   * Throws {@link ValetException} (INVALID_ARGUMENT) for an out-of-order event; nothing changes then.
   * After close(), does nothing: Android may still deliver the events it is wired to.
   */
  public void onLifecycleEvent(LifecycleEvent event) {
    hook(h -> NativeLib.lifecycle(h, event.ordinal()));
  }

  /**
   * PowerManager.THERMAL_STATUS_* (0..6) and getThermalHeadroom() (negative or NaN: unknown). After
   * close(), does nothing.
   */
  public void onThermalStatus(int status, float headroom) {
    hook(h -> NativeLib.thermal(h, status, headroom));
  }

  public void onThermalStatus(int status) {
    onThermalStatus(status, -1.0f);
  }

  /**
   * The battery ({@link PowerState}; {@link ValetPowerReceiver} sends it from Android's broadcasts):
   * a tier the budget table's power column stops parks, never cancelled, until a report lets it run.
   * After close(), does nothing.
   */
  public void onPowerState(PowerState power) {
    Objects.requireNonNull(power, "power");
    hook(h -> NativeLib.power(h, power.charging, power.batteryPercent, power.powerSave, power.batteryLow));
  }

  /** ComponentCallbacks2.onTrimMemory(level): frees memory, never cancels. After close(), does nothing. */
  public void onTrimMemory(int level) {
    hook(h -> NativeLib.trimMemory(h, level));
  }

  /** New KV pool and snapshot-RAM budgets. Waits for the model's thread (at most one step). */
  public void setMemoryBudgets(long poolBytes, long snapshotRamBytes) {
    run(h -> NativeLib.setMemoryBudgets(h, poolBytes, snapshotRamBytes));
  }

  /**
   * Blocks until every task submitted so far has finished (its onDone has run), or close() has
   * cancelled it. From a listener of this Valet, which it would wait for, it throws
   * IllegalStateException.
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
    final byte[] bytes = utf8(text, "the text");
    return call(h -> NativeLib.tokenize(h, bytes));
  }

  /**
   * Stops the scheduler (a running step stops at its next layer boundary, waitIdle() returns, and
   * every unfinished task ends CANCELLED with {@link ValetException#ABORTED}; its onDone has run
   * when close() returns, unless it runs on an executor), waits for calls other threads are making
   * on it, then frees the model. From a listener or a result continuation of this Valet, which the
   * stop would wait for, close() returns at once and a thread of valet's finishes it: {@link
   * #closed()} completes when the model is freed. Idempotent and safe from any number of threads at
   * once; every call after it but the Android hooks ({@link #onTrimMemory}, {@link
   * #onThermalStatus}, {@link #onPowerState}, {@link #onLifecycleEvent}: no-ops) throws
   * IllegalStateException.
   */
  @Override
  public void close() {
    scheduler.close();
    ForgottenValets.untrack(forgotten);
  }

  /** Completes once close() has freed the model (also when close() returned before that). */
  public CompletableFuture<Void> closed() {
    return scheduler.freed().thenApply(v -> v);
  }

  /**
   * Where valet reports what it cannot throw (the native library's warnings, a listener's
   * exception, a failed callback delivery), process-wide; null restores the default, Android's log
   * (tag "valet") or stderr. See {@link LogHandler} for the threads it is called on.
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

  // The Android hooks: wired to system callbacks that may fire after close(), where they do nothing.
  private void hook(NativeAction body) {
    final long handle = scheduler.tryAcquire();
    if (handle == 0) return;
    try {
      body.on(handle);
    } finally {
      scheduler.release();
    }
  }

  private SerialDelivery deliveryOn(Executor executor) {
    return executor == null ? null : scheduler.newDelivery(executor);
  }

  static byte[] utf8(String s, String what) {
    return Utf8.encode(s, what);
  }

  private static byte[] utf8OrEmpty(String s, String what) {
    return s == null ? new byte[0] : utf8(s, what);
  }
}
