package dev.valet;

/** A task's state and, when parked, why ({@link Valet#info(Task)}). */
public final class TaskInfo {
  private final TaskState state;
  private final ParkCause parkCause;

  TaskInfo(TaskState state, ParkCause parkCause) {
    this.state = state;
    this.parkCause = parkCause;
  }

  public TaskState state() {
    return state;
  }

  /** NONE unless {@link #state()} is PARKED. */
  public ParkCause parkCause() {
    return parkCause;
  }
}
