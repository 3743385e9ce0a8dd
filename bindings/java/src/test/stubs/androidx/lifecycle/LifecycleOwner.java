package androidx.lifecycle;

/** Test-only stand-in for androidx.lifecycle.LifecycleOwner. */
public interface LifecycleOwner {
  Lifecycle getLifecycle();
}
