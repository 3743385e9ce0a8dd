package dev.valet;

/** androidx.lifecycle.Lifecycle.Event, in valet.h's order (ON_ANY is never sent). */
public enum LifecycleEvent {
  ON_CREATE,
  ON_START,
  ON_RESUME,
  ON_PAUSE,
  ON_STOP,
  ON_DESTROY
}
