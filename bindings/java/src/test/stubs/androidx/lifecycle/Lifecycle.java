package androidx.lifecycle;

/** Test-only stand-in for androidx.lifecycle.Lifecycle (states, events, observers). */
public abstract class Lifecycle {
  public enum State {
    DESTROYED,
    INITIALIZED,
    CREATED,
    STARTED,
    RESUMED
  }

  public enum Event {
    ON_CREATE,
    ON_START,
    ON_RESUME,
    ON_PAUSE,
    ON_STOP,
    ON_DESTROY,
    ON_ANY
  }

  public abstract void addObserver(LifecycleObserver observer);

  public abstract void removeObserver(LifecycleObserver observer);

  public abstract State getCurrentState();
}
