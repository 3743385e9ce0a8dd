package dev.valet;

import androidx.lifecycle.DefaultLifecycleObserver;
import androidx.lifecycle.Lifecycle;
import androidx.lifecycle.LifecycleObserver;
import androidx.lifecycle.LifecycleOwner;
import java.util.ArrayList;
import java.util.List;

/**
 * ProcessLifecycleOwner's dispatch rules, with the delay made explicit
 * ({@link #delayElapsed()}): ON_CREATE once at start; ON_START with the first
 * started activity; ON_RESUME with the first resumed one unless the pause is
 * still pending (then nothing is sent); ON_PAUSE and ON_STOP only when the
 * delay after the last pause elapses; never ON_DESTROY. A late observer is
 * brought up to the current state, as LifecycleRegistry does.
 */
final class FakeProcessLifecycleOwner extends Lifecycle implements LifecycleOwner {
  private final List<DefaultLifecycleObserver> observers = new ArrayList<>();
  private final List<Event> sent = new ArrayList<>();
  private State state = State.INITIALIZED;
  private int started;
  private int resumed;
  private boolean pauseSent = true;
  private boolean stopSent = true;
  private boolean delayPending;

  FakeProcessLifecycleOwner() {
    dispatch(Event.ON_CREATE);
  }

  @Override
  public Lifecycle getLifecycle() {
    return this;
  }

  @Override
  public State getCurrentState() {
    return state;
  }

  @Override
  public void addObserver(LifecycleObserver observer) {
    final DefaultLifecycleObserver o = (DefaultLifecycleObserver) observer;
    observers.add(o);
    final Event[] up = {Event.ON_CREATE, Event.ON_START, Event.ON_RESUME};
    for (int i = 0; i < state.ordinal() - State.INITIALIZED.ordinal(); ++i) deliver(o, up[i]);
  }

  @Override
  public void removeObserver(LifecycleObserver observer) {
    observers.remove(observer);
  }

  List<Event> sent() {
    return sent;
  }

  void activityStarted() {
    if (++started == 1 && stopSent) {
      stopSent = false;
      dispatch(Event.ON_START);
    }
  }

  void activityResumed() {
    if (++resumed != 1) return;
    if (pauseSent) {
      pauseSent = false;
      dispatch(Event.ON_RESUME);
    } else {
      delayPending = false;
    }
  }

  void activityPaused() {
    if (--resumed == 0) delayPending = true;
  }

  void activityStopped() {
    --started;
    stopIfNeeded();
  }

  void delayElapsed() {
    if (!delayPending) return;
    delayPending = false;
    if (resumed == 0) {
      pauseSent = true;
      dispatch(Event.ON_PAUSE);
    }
    stopIfNeeded();
  }

  private void stopIfNeeded() {
    if (started == 0 && pauseSent && !stopSent) {
      stopSent = true;
      dispatch(Event.ON_STOP);
    }
  }

  private void dispatch(Event e) {
    sent.add(e);
    switch (e) {
      case ON_CREATE, ON_STOP -> state = State.CREATED;
      case ON_START, ON_PAUSE -> state = State.STARTED;
      case ON_RESUME -> state = State.RESUMED;
      default -> throw new AssertionError(e);
    }
    for (DefaultLifecycleObserver o : observers) deliver(o, e);
  }

  private void deliver(DefaultLifecycleObserver o, Event e) {
    switch (e) {
      case ON_CREATE -> o.onCreate(this);
      case ON_START -> o.onStart(this);
      case ON_RESUME -> o.onResume(this);
      case ON_PAUSE -> o.onPause(this);
      case ON_STOP -> o.onStop(this);
      default -> throw new AssertionError(e);
    }
  }
}
