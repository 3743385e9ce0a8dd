package dev.valet;

/** What {@link Valet#recover} asks for each durable task it resumes. */
public interface RecoveryListener {
  /**
   * The listener the resumed task runs with (null: none). Called on the thread calling recover,
   * before any of the task's callbacks; {@code task.task()} is not known yet (null) here.
   */
  TokenListener onResumed(RecoveredTask task);
}
