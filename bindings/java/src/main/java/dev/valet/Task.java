package dev.valet;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;

/**
 * A submitted task: its id, a cancel, and its result as a future. It keeps its {@link Valet}
 * reachable until it finishes.
 */
public final class Task {
  private final Valet valet;
  private final NativeScheduler scheduler;
  private final Tier tier;
  private final TokenListener listener;
  private final SerialDelivery delivery;  // null: callbacks on valet's delivery thread
  private final CountDownLatch submitted = new CountDownLatch(1);
  private final CompletableFuture<TaskResult> result = new CompletableFuture<>();
  private volatile long id = -1;

  Task(Valet valet, NativeScheduler scheduler, Tier tier, TokenListener listener, SerialDelivery delivery) {
    this.valet = valet;
    this.scheduler = scheduler;
    this.tier = tier;
    this.listener = listener;
    this.delivery = delivery;
  }

  /** The scheduler's id; a call from another thread while submit runs waits for it. */
  public long id() {
    boolean interrupted = false;
    while (true) {
      try {
        submitted.await();
        break;
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) Thread.currentThread().interrupt();
    return id;
  }

  public Tier tier() {
    return tier;
  }

  /**
   * Completes exactly once, after the listener's onDone and where it ran (so a continuation added
   * with thenRun runs there too, unless the future had completed before).
   */
  public CompletableFuture<TaskResult> result() {
    return result;
  }

  /** True exactly when the task ends CANCELLED; false when it had already finished. */
  public boolean cancel() {
    return valet.cancel(this);
  }

  boolean belongsTo(Valet v) {
    return valet == v;
  }

  /** The id without waiting: -1 until submit returns or a callback brings it. */
  long knownId() {
    return id;
  }

  // By submit or by the first callback, which may run before submit returns.
  void setId(long value) {
    id = value;
    submitted.countDown();
  }

  // Called from native code (task_callbacks.cpp) on valet's delivery threads, one at a time per
  // task. A listener's exception is logged and dropped.
  void onNativeToken(long taskId, int token, byte[] utf8) {
    setId(taskId);
    if (listener == null) return;
    final String text = new String(utf8, StandardCharsets.UTF_8);
    post(() -> deliver("onToken", () -> listener.onToken(this, token, text)));
  }

  void onNativeState(long taskId, int state) {
    setId(taskId);
    if (listener != null) post(() -> deliver("onState", () -> listener.onState(this, TaskState.of(state))));
  }

  void onNativeDone(
      long taskId,
      int state,
      int status,
      byte[] message,
      byte[] text,
      int tokens,
      double[] d,
      int[] i,
      byte[] content,
      byte[][] calls) {
    setId(taskId);
    final List<ToolCall> toolCalls = new ArrayList<>();
    for (int c = 0; c + 2 < calls.length; c += 3) {
      toolCalls.add(
          new ToolCall(
              new String(calls[c], StandardCharsets.UTF_8),
              new String(calls[c + 1], StandardCharsets.UTF_8),
              new String(calls[c + 2], StandardCharsets.UTF_8)));
    }
    final TaskResult r =
        new TaskResult(
            TaskState.of(state),
            status,
            new String(message, StandardCharsets.UTF_8),
            text,
            tokens,
            d[0],
            d[1],
            d[2],
            i[0],
            i[3],
            new int[] {i[4], i[5], i[6], i[7], i[8]},
            i[9],
            new String(content, StandardCharsets.UTF_8),
            toolCalls);
    post(
        () -> {
          if (listener != null) deliver("onDone", () -> listener.onDone(this, r));
          deliver("result().complete", () -> result.complete(r));
        });
  }

  private void post(Runnable event) {
    if (delivery == null) {
      event.run();
    } else {
      delivery.post(event);
    }
  }

  // Marks this thread as inside a listener of this Valet while `call` runs: close() from there
  // finishes on a thread of its own, and waitIdle() refuses.
  private void deliver(String callback, Runnable call) {
    scheduler.enterCallback();
    try {
      call.run();
    } catch (Throwable t) {
      ValetLog.listenerThrew(this, callback, t);
    } finally {
      scheduler.exitCallback();
    }
  }
}
