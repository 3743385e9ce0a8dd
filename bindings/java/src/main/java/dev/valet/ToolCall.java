package dev.valet;

import java.util.Objects;

/**
 * A call of a tool a request offered: as the model wrote it ({@link TaskResult#toolCalls()}) or as
 * the app replays an earlier turn ({@link Request.Builder#assistant(String, ToolCall...)}).
 */
public final class ToolCall {
  private final String id;
  private final String name;
  private final String arguments;

  /** {@code arguments}: a JSON object's text. */
  public ToolCall(String id, String name, String arguments) {
    this.id = Objects.requireNonNull(id, "id");
    this.name = Objects.requireNonNull(name, "name");
    this.arguments = Objects.requireNonNull(arguments, "arguments");
  }

  /** Names the call; the tool message answering it gives it back. */
  public String id() {
    return id;
  }

  public String name() {
    return name;
  }

  /** The arguments, a JSON object's text (compact when the model wrote it). */
  public String arguments() {
    return arguments;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof ToolCall)) return false;
    final ToolCall c = (ToolCall) o;
    return id.equals(c.id) && name.equals(c.name) && arguments.equals(c.arguments);
  }

  @Override
  public int hashCode() {
    return Objects.hash(id, name, arguments);
  }

  @Override
  public String toString() {
    return name + arguments + " (" + id + ")";
  }
}
