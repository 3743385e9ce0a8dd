package dev.valet;

/** A durable task {@link Valet#recover} found in the snapshot directory. */
public final class RecoveredTask {
  private final String durableKey;
  private final Tier tier;
  private final int[] tokens;
  private final TaskState state;
  private final String message;
  private final Task task;

  RecoveredTask(String durableKey, Tier tier, int[] tokens, TaskState state, String message, Task task) {
    this.durableKey = durableKey;
    this.tier = tier;
    this.tokens = tokens;
    this.state = state;
    this.message = message;
    this.task = task;
  }

  public String durableKey() {
    return durableKey;
  }

  public Tier tier() {
    return tier;
  }

  /** The token ids it had generated before the process ended. */
  public int[] tokens() {
    return tokens.clone();
  }

  /** QUEUED: resumed (see {@link #task()}); DONE or FAILED: it had ended and waits for ack(). */
  public TaskState state() {
    return state;
  }

  /** Why a FAILED one failed, else "". */
  public String message() {
    return message;
  }

  /** The resumed task; null for one that had ended. */
  public Task task() {
    return task;
  }
}
