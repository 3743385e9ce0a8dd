package dev.valet;

/**
 * Receives a task's output: on one of valet's delivery threads, or on the executor the Valet or
 * the submit was given; never on the thread that runs the model, nor on the one that submitted.
 * A task's callbacks come one at a time, in order, onDone last. A slow listener holds back only its
 * own task: once it falls behind, the task is parked (resumed exactly where it was) until the
 * listener catches up, while the model serves the other tasks. An exception thrown here is reported
 * to the {@link LogHandler} with its stack trace, then dropped. From here every method of the Valet
 * works but waitIdle(), which would wait for this very callback (IllegalStateException); close()
 * returns at once and finishes on a thread of valet's ({@link Valet#closed()}).
 */
public interface TokenListener {
  /**
   * Every generated token, in order; {@code text} is what may be shown now: whole characters (a
   * character split across tokens comes with its last one), U+0000 included.
   */
  void onToken(Task task, int token, String text);

  default void onState(Task task, TaskState state) {}

  /** Exactly once per task, also for tasks cancelled by {@link Valet#close()}; the last callback. */
  default void onDone(Task task, TaskResult result) {}
}
