package dev.valet;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** How a task ended, with its metrics. (A class, not a record: records need API 34 or D8's desugaring.) */
public final class TaskResult {
  private final TaskState state;
  private final int status;
  private final String message;
  private final byte[] textBytes;
  private final String text;
  private final int tokens;
  private final double ttftSeconds;
  private final double tpotSeconds;
  private final double e2eSeconds;
  private final int promptTokens;
  private final int parks;
  private final int[] parksByKind;
  private final int tokensRecomputed;
  private final String content;
  private final List<ToolCall> toolCalls;

  TaskResult(
      TaskState state,
      int status,
      String message,
      byte[] textBytes,
      int tokens,
      double ttftSeconds,
      double tpotSeconds,
      double e2eSeconds,
      int promptTokens,
      int parks,
      int[] parksByKind,
      int tokensRecomputed,
      String content,
      List<ToolCall> toolCalls) {
    this.state = state;
    this.status = status;
    this.message = message;
    this.textBytes = textBytes;
    this.text = new String(textBytes, StandardCharsets.UTF_8);
    this.tokens = tokens;
    this.ttftSeconds = ttftSeconds;
    this.tpotSeconds = tpotSeconds;
    this.e2eSeconds = e2eSeconds;
    this.promptTokens = promptTokens;
    this.parks = parks;
    this.parksByKind = parksByKind;
    this.tokensRecomputed = tokensRecomputed;
    this.content = content;
    this.toolCalls = Collections.unmodifiableList(new ArrayList<>(toolCalls));
  }

  /**
   * A task that offered tools (tool choice not NONE) and ended DONE: the calls its answer made, each
   * with a fresh id, when the answer reads as calls of offered tools (in the syntax the model's
   * family writes calls in). Otherwise empty.
   */
  public List<ToolCall> toolCalls() {
    return toolCalls;
  }

  /** The answer without its tool calls: with calls, the text before them (trimmed); else {@link #text()}. */
  public String content() {
    return content;
  }

  /** DONE, CANCELLED or FAILED. */
  public TaskState state() {
    return state;
  }

  /** valet.h's valet_status: why it FAILED; for CANCELLED, 0 (the app) or {@link ValetException#ABORTED} (closed). */
  public int status() {
    return status;
  }

  /** The failure message, "scheduler stopped" when close() cancelled it, or "". */
  public String message() {
    return message;
  }

  /**
   * The generated text. Bytes that are not UTF-8 (a model may generate any byte) read as U+FFFD
   * here; {@link #textBytes()} has them as they are.
   */
  public String text() {
    return text;
  }

  /** The generated text as the model produced it: UTF-8, U+0000 included, every byte kept. */
  public byte[] textBytes() {
    return textBytes.clone();
  }

  /** Generated tokens. */
  public int tokens() {
    return tokens;
  }

  /** Submit to first token; -1 without a token. */
  public double ttftSeconds() {
    return ttftSeconds;
  }

  /** Per output token after the first; -1 with fewer than two. */
  public double tpotSeconds() {
    return tpotSeconds;
  }

  public double e2eSeconds() {
    return e2eSeconds;
  }

  /** Including the shared system prompt. */
  public int promptTokens() {
    return promptTokens;
  }

  public int parks() {
    return parks;
  }

  /** Parks by valet_park_kind: resident, snapshot RAM, snapshot disk, partial, full. */
  public int[] parksByKind() {
    return parksByKind.clone();
  }

  public int tokensRecomputed() {
    return tokensRecomputed;
  }

  /** Cancelled because the Valet was closed first. */
  public boolean aborted() {
    return state == TaskState.CANCELLED && status == ValetException.ABORTED;
  }
}
