package androidx.lifecycle;

/** Test-only stand-in for androidx.lifecycle.LifecycleObserver (a marker). */
public interface LifecycleObserver {}
