package dev.valet;

/** A task's state, in valet.h's order. */
public enum TaskState {
  QUEUED,
  PREFILLING,
  PARKED,
  DECODING,
  DONE,
  CANCELLED,
  FAILED;

  static TaskState of(int value) {
    return values()[value];
  }
}
