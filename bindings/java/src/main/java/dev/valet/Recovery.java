package dev.valet;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;

/**
 * Collects what one valet_recover reports.  Native code calls both on the thread calling
 * {@link Valet#recover}, before it returns: onNativeResumed for a resumed task (the Task returned
 * receives its callbacks; none comes before), onNativeEnded for an ended one.
 */
final class Recovery {
  private final Valet valet;
  private final NativeScheduler scheduler;
  private final RecoveryListener listener;
  private final Executor executor;  // the Valet's callback executor, or null
  private final List<RecoveredTask> found = new ArrayList<>();

  Recovery(Valet valet, NativeScheduler scheduler, RecoveryListener listener, Executor executor) {
    this.valet = valet;
    this.scheduler = scheduler;
    this.listener = listener;
    this.executor = executor;
  }

  Task onNativeResumed(byte[] key, int tier, int[] tokens, long id) {
    final String name = new String(key, StandardCharsets.UTF_8);
    final Tier t = Tier.values()[tier];
    TokenListener tokenListener = null;
    if (listener != null) {
      scheduler.enterCallback();
      try {
        tokenListener = listener.onResumed(new RecoveredTask(name, t, tokens, TaskState.QUEUED, "", null));
      } catch (Throwable e) {
        ValetLog.listenerThrew(id, "onResumed", e);
      } finally {
        scheduler.exitCallback();
      }
    }
    final Task task =
        new Task(valet, scheduler, t, tokenListener, executor == null ? null : scheduler.newDelivery(executor));
    task.setId(id);
    synchronized (found) {
      found.add(new RecoveredTask(name, t, tokens, TaskState.QUEUED, "", task));
    }
    return task;
  }

  void onNativeEnded(byte[] key, int tier, int[] tokens, int state, byte[] message) {
    synchronized (found) {
      found.add(
          new RecoveredTask(
              new String(key, StandardCharsets.UTF_8),
              Tier.values()[tier],
              tokens,
              TaskState.of(state),
              new String(message, StandardCharsets.UTF_8),
              null));
    }
  }

  List<RecoveredTask> found() {
    synchronized (found) {
      return new ArrayList<>(found);
    }
  }
}
