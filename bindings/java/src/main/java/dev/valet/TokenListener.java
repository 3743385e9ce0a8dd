package dev.valet;

/**
 * Receives a task's output. Called on the scheduler's worker thread (or, for
 * tasks still unfinished at {@link Valet#close()}, on the closing thread),
 * never on the thread that submitted; keep it short and hand UI work to the
 * main thread. An exception thrown here is reported to the {@link LogHandler}
 * with its stack trace, then dropped. From here, the Valet's close(),
 * waitIdle() and setMemoryBudgets(), which would wait for this very thread,
 * throw IllegalStateException; submit, cancel and the rest work.
 */
public interface TokenListener {
  /** Every generated token, in order; {@code text} is what may be shown now. */
  void onToken(Task task, int token, String text);

  default void onState(Task task, TaskState state) {}

  /** Exactly once per task, also for tasks cancelled by {@link Valet#close()}. */
  default void onDone(Task task, TaskResult result) {}
}
