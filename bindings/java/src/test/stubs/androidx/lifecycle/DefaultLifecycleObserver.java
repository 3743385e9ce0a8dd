package androidx.lifecycle;

/** Test-only stand-in for androidx.lifecycle.DefaultLifecycleObserver (same methods). */
public interface DefaultLifecycleObserver extends LifecycleObserver {
  default void onCreate(LifecycleOwner owner) {}

  default void onStart(LifecycleOwner owner) {}

  default void onResume(LifecycleOwner owner) {}

  default void onPause(LifecycleOwner owner) {}

  default void onStop(LifecycleOwner owner) {}

  default void onDestroy(LifecycleOwner owner) {}
}
