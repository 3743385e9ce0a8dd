package dev.valet;

/** The app's lifecycle state as the scheduler's governor sees it. */
public enum LifecycleState {
  DESTROYED,
  CREATED,
  STARTED,
  RESUMED
}
