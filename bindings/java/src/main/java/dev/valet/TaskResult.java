package dev.valet;

/** How a task ended, with its metrics. */
public record TaskResult(
    TaskState state,
    int status,
    String message,
    String text,
    int tokens,
    double ttftSeconds,
    double tpotSeconds,
    double e2eSeconds,
    int promptTokens,
    int parks,
    int[] parksByKind,
    int tokensRecomputed) {

  /** Cancelled because the Valet was closed first. */
  public boolean aborted() {
    return state == TaskState.CANCELLED && status == ValetException.ABORTED;
  }
}
