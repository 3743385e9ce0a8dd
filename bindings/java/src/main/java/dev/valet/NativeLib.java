package dev.valet;

import java.io.FileDescriptor;

/**
 * libvalet_jni.so's natives (bindings/java/src/main/cpp/valet_jni.cpp). Text crosses as UTF-8
 * byte[]; a failed call throws {@link ValetException}. Handles come from a live {@link
 * NativeScheduler}, which keeps them valid for the length of each call.
 */
final class NativeLib {
  static {
    System.loadLibrary("valet_jni");
  }

  private NativeLib() {}

  static native long create(
      byte[] modelPath,
      int modelFd,
      long modelOffset,
      long modelSize,
      int threads,
      int contextLength,
      long kvBytes,
      long snapshotRamBytes,
      byte[] snapshotDir,
      long durableDiskBudgetBytes,
      byte[] weightsCache,
      long weightsCacheBudgetBytes,
      byte[] budgetJson,
      int initialState);

  static native long createAsync(
      byte[] modelPath,
      int modelFd,
      long modelOffset,
      long modelSize,
      int threads,
      int contextLength,
      long kvBytes,
      long snapshotRamBytes,
      byte[] snapshotDir,
      long durableDiskBudgetBytes,
      byte[] weightsCache,
      long weightsCacheBudgetBytes,
      byte[] budgetJson,
      int initialState,
      NativeLoad sink);

  static native void loadCancel(long load);

  static native void removeWeightsCache(byte[] path);

  static native void stop(long handle);

  static native void destroy(long handle);

  static native long submit(
      long handle,
      Task task,
      int tier,
      byte[] systemPrompt,
      byte[][] roles,
      byte[][] contents,
      byte[] prompt,
      byte[][] stop,
      int maxTokens,
      float temperature,
      int topK,
      float topP,
      float minP,
      float repeatPenalty,
      long seed,
      boolean durable,
      byte[] durableKey,
      int constraintKind,
      byte[] constraintText,
      int maxWhitespace,
      byte[][] tools,
      int toolChoice,
      byte[] toolChoiceName,
      boolean parallelToolCalls,
      byte[][] toolCallIds,
      int[] callCounts,
      byte[][] calls);

  /** valet_recover: reports every durable task found to the collector (Recovery). */
  static native void recover(long handle, Recovery collector);

  static native void retryJournals(long handle);

  /** {state, park cause} as valet_get_task_info gives them. */
  static native int[] taskInfo(long handle, long id);

  /** False when there was no journal under that key. */
  static native boolean ack(long handle, byte[] durableKey);

  /** False when the task had finished. */
  static native boolean cancel(long handle, long id);

  static native void lifecycle(long handle, int event);

  static native void thermal(long handle, int status, float headroom);

  static native void power(long handle, boolean charging, int batteryPercent, boolean powerSave, boolean batteryLow);

  static native void trimMemory(long handle, int level);

  static native void setMemoryBudgets(long handle, long poolBytes, long snapshotRamBytes);

  static native void waitIdle(long handle);

  static native long[] stats(long handle);

  static native int[] tokenize(long handle, byte[] text);

  /** valet_default_task_params(): tier, maxTokens, the float bits of temperature, topK, topP, minP, repeatPenalty, then seed. */
  static native long[] defaultTaskParams();

  static native int descriptorOf(FileDescriptor fd);

  static native void log(int priority, byte[] message);

  static native long liveTaskRefs();

  static native long liveSchedulers();
}
