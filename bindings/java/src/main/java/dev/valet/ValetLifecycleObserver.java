package dev.valet;

import androidx.lifecycle.DefaultLifecycleObserver;
import androidx.lifecycle.LifecycleOwner;

/**
 * Forwards lifecycle events to a {@link Valet}. Add it to
 * ProcessLifecycleOwner.get().getLifecycle() (or to an Activity's lifecycle):
 * androidx first brings it up to the current state from ON_CREATE, which the
 * scheduler accepts whatever state it started in. An event the scheduler
 * refuses (a repeated or out-of-order one, which androidx does not send) is
 * counted, not thrown into the main thread.
 */
public final class ValetLifecycleObserver implements DefaultLifecycleObserver {
  private final Valet valet;
  private volatile int refused;
  private volatile String lastError = "";

  public ValetLifecycleObserver(Valet valet) {
    this.valet = valet;
  }

  @Override
  public void onCreate(LifecycleOwner owner) {
    send(LifecycleEvent.ON_CREATE);
  }

  @Override
  public void onStart(LifecycleOwner owner) {
    send(LifecycleEvent.ON_START);
  }

  @Override
  public void onResume(LifecycleOwner owner) {
    send(LifecycleEvent.ON_RESUME);
  }

  @Override
  public void onPause(LifecycleOwner owner) {
    send(LifecycleEvent.ON_PAUSE);
  }

  @Override
  public void onStop(LifecycleOwner owner) {
    send(LifecycleEvent.ON_STOP);
  }

  @Override
  public void onDestroy(LifecycleOwner owner) {
    send(LifecycleEvent.ON_DESTROY);
  }

  /** Events the scheduler refused so far. */
  public int refusedEvents() {
    return refused;
  }

  public String lastError() {
    return lastError;
  }

  private synchronized void send(LifecycleEvent event) {
    try {
      valet.onLifecycleEvent(event);
    } catch (ValetException | IllegalStateException e) {
      ++refused;
      lastError = e.getMessage();
    }
  }
}
