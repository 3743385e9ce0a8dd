package dev.valet;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * One task's request, as valet.h's valet_task_params: a tier, chat messages (rendered with the
 * model's own chat template, with the tools it may call) or a raw prompt, an optional shared
 * system prompt, stop strings, a token limit, llama.cpp's sampling chain and an output
 * constraint. Unset fields take the C API's defaults (valet_default_task_params()). Immutable;
 * build one with {@link #builder()}.
 */
public final class Request {
  public static final Tier DEFAULT_TIER = Tier.FOREGROUND_CHAT;
  public static final int DEFAULT_MAX_TOKENS = 128;
  /** At or below 0: greedy. */
  public static final float DEFAULT_TEMPERATURE = 0.8f;
  /** 0: disabled. */
  public static final int DEFAULT_TOP_K = 40;
  /** 1: disabled. */
  public static final float DEFAULT_TOP_P = 0.95f;
  /** 0: disabled. */
  public static final float DEFAULT_MIN_P = 0.05f;
  /** 1: disabled. */
  public static final float DEFAULT_REPEAT_PENALTY = 1.0f;

  public static final long DEFAULT_SEED = 0x5eed5eed5eed5eedL;

  /**
   * A chat turn; roles are "system", "user", "assistant" (with the tool calls it made) and "tool"
   * (a call's result, naming the call).
   */
  public static final class Message {
    private final String role;
    private final String content;
    private final List<ToolCall> toolCalls;
    private final String toolCallId;

    Message(String role, String content, List<ToolCall> toolCalls, String toolCallId) {
      this.role = role;
      this.content = content;
      this.toolCalls = Collections.unmodifiableList(new ArrayList<>(toolCalls));
      this.toolCallId = toolCallId;
    }

    public String role() {
      return role;
    }

    public String content() {
      return content;
    }

    /** An assistant turn's calls; empty for every other turn. */
    public List<ToolCall> toolCalls() {
      return toolCalls;
    }

    /** A tool turn: the call whose result it is; null for every other turn. */
    public String toolCallId() {
      return toolCallId;
    }
  }

  /** A function the model may call, shown to it by its chat template. */
  public static final class Tool {
    private final String name;
    private final String description;
    private final String parameters;

    Tool(String name, String description, String parameters) {
      this.name = name;
      this.description = description;
      this.parameters = parameters;
    }

    /** 1-64 of [A-Za-z0-9_-]. */
    public String name() {
      return name;
    }

    /** Null: none. */
    public String description() {
      return description;
    }

    /** A JSON Schema object's text; null: any object. */
    public String parameters() {
      return parameters;
    }
  }

  /** How the model may use the tools (valet.h's valet_tool_choice, same order). */
  public enum ToolChoice {
    /** Text or calls, as the model chooses; a call it begins follows its tool's schema. */
    AUTO,
    /** The tools are shown, never called. */
    NONE,
    /** Calls, generated under the tools' parameter schemas (so their arguments always follow them). */
    REQUIRED,
    /** A call of {@link #toolChoiceName()}, likewise. */
    NAMED
  }

  private final Tier tier;
  private final String systemPrompt;
  private final List<Message> messages;
  private final String prompt;
  private final List<String> stop;
  private final int maxTokens;
  private final float temperature;
  private final int topK;
  private final float topP;
  private final float minP;
  private final float repeatPenalty;
  private final long seed;
  private final boolean durable;
  private final String durableKey;
  private final Constraint constraint;
  private final String constraintText;
  private final int maxWhitespace;
  private final List<Tool> tools;
  private final ToolChoice toolChoice;
  private final String toolChoiceName;
  private final boolean parallelToolCalls;

  /** What a task's output must follow (valet.h's valet_constraint_kind, same order). */
  public enum Constraint {
    NONE,
    JSON_SCHEMA,
    JSON_OBJECT,
    GRAMMAR,
    REGEX
  }

  private Request(Builder b, String durableKey) {
    tier = b.tier;
    systemPrompt = b.systemPrompt;
    messages = Collections.unmodifiableList(new ArrayList<>(b.messages));
    prompt = b.prompt;
    stop = Collections.unmodifiableList(new ArrayList<>(b.stop));
    maxTokens = b.maxTokens;
    temperature = b.temperature;
    topK = b.topK;
    topP = b.topP;
    minP = b.minP;
    repeatPenalty = b.repeatPenalty;
    seed = b.seed;
    durable = b.durable;
    this.durableKey = durableKey;
    constraint = b.constraint;
    constraintText = b.constraintText;
    maxWhitespace = b.maxWhitespace;
    tools = Collections.unmodifiableList(new ArrayList<>(b.tools));
    toolChoice = b.toolChoice;
    toolChoiceName = b.toolChoiceName;
    parallelToolCalls = b.parallelToolCalls;
  }

  public static Builder builder() {
    return new Builder();
  }

  public Tier tier() {
    return tier;
  }

  /** The static system prompt shared by many tasks (its KV is kept once); null: none. */
  public String systemPrompt() {
    return systemPrompt;
  }

  public List<Message> messages() {
    return messages;
  }

  /** The raw prompt, used as is; null for a chat request. */
  public String prompt() {
    return prompt;
  }

  public List<String> stop() {
    return stop;
  }

  public int maxTokens() {
    return maxTokens;
  }

  public float temperature() {
    return temperature;
  }

  public int topK() {
    return topK;
  }

  public float topP() {
    return topP;
  }

  public float minP() {
    return minP;
  }

  public float repeatPenalty() {
    return repeatPenalty;
  }

  public long seed() {
    return seed;
  }

  /** Journaled so that it survives the process (see {@link Valet#recover}). */
  public boolean durable() {
    return durable;
  }

  /** A durable task's name across restarts (made up by build() when not given); null if not durable. */
  public String durableKey() {
    return durableKey;
  }

  /** What the output must follow; NONE by default. */
  public Constraint constraint() {
    return constraint;
  }

  /** The JSON Schema, GBNF grammar or regular expression; null for NONE and JSON_OBJECT. */
  public String constraintText() {
    return constraintText;
  }

  /** JSON constraints: 0 for compact JSON, else the longest whitespace run between two tokens. */
  public int maxWhitespace() {
    return maxWhitespace;
  }

  /** The tools the chat offers; the answer's calls come back in {@link TaskResult#toolCalls()}. */
  public List<Tool> tools() {
    return tools;
  }

  public ToolChoice toolChoice() {
    return toolChoice;
  }

  /** NAMED: the tool to call; else null. */
  public String toolChoiceName() {
    return toolChoiceName;
  }

  /** Several calls in one answer (else at most one). */
  public boolean parallelToolCalls() {
    return parallelToolCalls;
  }

  /**
   * Collects a request. Chat messages and a raw prompt are exclusive. Text is UTF-8 on its way to
   * native code; a prompt or a message may hold U+0000, while the system prompt, roles and stop
   * strings cannot (the C API ends them there), which {@link #build()} refuses.
   */
  public static final class Builder {
    private Tier tier = DEFAULT_TIER;
    private String systemPrompt;
    private final List<Message> messages = new ArrayList<>();
    private String prompt;
    private final List<String> stop = new ArrayList<>();
    private int maxTokens = DEFAULT_MAX_TOKENS;
    private float temperature = DEFAULT_TEMPERATURE;
    private int topK = DEFAULT_TOP_K;
    private float topP = DEFAULT_TOP_P;
    private float minP = DEFAULT_MIN_P;
    private float repeatPenalty = DEFAULT_REPEAT_PENALTY;
    private long seed = DEFAULT_SEED;
    private boolean durable;
    private String durableKey;
    private Constraint constraint = Constraint.NONE;
    private String constraintText;
    private int maxWhitespace;
    private final List<Tool> tools = new ArrayList<>();
    private ToolChoice toolChoice = ToolChoice.AUTO;
    private String toolChoiceName;
    private boolean parallelToolCalls;

    private Builder() {}

    public Builder tier(Tier t) {
      tier = required(t, "tier");
      return this;
    }

    public Builder systemPrompt(String text) {
      systemPrompt = text;
      return this;
    }

    /** Appends a chat turn with this role. */
    public Builder message(String role, String content) {
      messages.add(
          new Message(required(role, "role"), required(content, "content"), Collections.emptyList(), null));
      return this;
    }

    public Builder system(String content) {
      return message("system", content);
    }

    public Builder user(String content) {
      return message("user", content);
    }

    public Builder assistant(String content) {
      return message("assistant", content);
    }

    /** An earlier assistant turn that called tools (its content may be ""). */
    public Builder assistant(String content, ToolCall... calls) {
      final List<ToolCall> list = new ArrayList<>();
      for (ToolCall c : calls) list.add(required(c, "tool call"));
      messages.add(new Message("assistant", required(content, "content"), list, null));
      return this;
    }

    /** A tool call's result, answering the call named {@code toolCallId}. */
    public Builder toolResult(String toolCallId, String content) {
      messages.add(
          new Message("tool", required(content, "content"), Collections.emptyList(), required(toolCallId, "toolCallId")));
      return this;
    }

    /**
     * Offers the model a function (at most 128 per request): its name, a description (null: none)
     * and its parameters as a JSON Schema object's text (null: any object).
     */
    public Builder tool(String name, String description, String parameters) {
      tools.add(new Tool(required(name, "tool name"), description, parameters));
      return this;
    }

    /** How the model may use the tools; AUTO by default. NAMED takes {@link #toolChoice(String)}. */
    public Builder toolChoice(ToolChoice choice) {
      toolChoice = required(choice, "tool choice");
      toolChoiceName = null;
      return this;
    }

    /** The answer is a call of this tool, generated under its parameters' schema. */
    public Builder toolChoice(String name) {
      toolChoice = ToolChoice.NAMED;
      toolChoiceName = required(name, "tool name");
      return this;
    }

    public Builder parallelToolCalls(boolean parallel) {
      parallelToolCalls = parallel;
      return this;
    }

    public Builder prompt(String text) {
      prompt = text;
      return this;
    }

    public Builder stop(String... strings) {
      for (String s : strings) stop.add(required(s, "stop string"));
      return this;
    }

    /** Tokens to generate at most; 0: until the context is full (see valet.h). Negative: refused at submit. */
    public Builder maxTokens(int n) {
      maxTokens = n;
      return this;
    }

    public Builder temperature(float t) {
      temperature = t;
      return this;
    }

    public Builder topK(int k) {
      topK = k;
      return this;
    }

    public Builder topP(float p) {
      topP = p;
      return this;
    }

    public Builder minP(float p) {
      minP = p;
      return this;
    }

    public Builder repeatPenalty(float penalty) {
      repeatPenalty = penalty;
      return this;
    }

    public Builder seed(long s) {
      seed = s;
      return this;
    }

    /**
     * A durable task (needs {@link Valet.Options#snapshotDir}): journaled as it runs, so that after
     * the process dies {@link Valet#recover} resumes it with the tokens an uninterrupted run gives;
     * its journal stays after it ends until {@link Valet#ack}. cancel() forgets it; close() keeps it.
     */
    public Builder durable(boolean d) {
      durable = d;
      return this;
    }

    /** Names a durable task across restarts: 1-128 of [A-Za-z0-9_.-], not starting with '.'. */
    public Builder durableKey(String key) {
      durableKey = key;
      durable = durable || key != null;
      return this;
    }

    /**
     * The output is JSON that this JSON Schema admits (docs/structured-output.md lists the
     * keywords; one valet does not compile makes submit throw, naming it).
     */
    public Builder jsonSchema(String schema) {
      return constrain(Constraint.JSON_SCHEMA, required(schema, "schema"));
    }

    /** The output is a JSON object. */
    public Builder jsonObject() {
      return constrain(Constraint.JSON_OBJECT, null);
    }

    /** The output follows this GBNF grammar (llama.cpp's syntax). */
    public Builder grammar(String gbnf) {
      return constrain(Constraint.GRAMMAR, required(gbnf, "grammar"));
    }

    /** The whole output matches this regular expression. */
    public Builder regex(String pattern) {
      return constrain(Constraint.REGEX, required(pattern, "regex"));
    }

    /** JSON constraints: at most this many spaces, tabs or newlines between tokens (0..16; 0: compact). */
    public Builder maxWhitespace(int n) {
      maxWhitespace = n;
      return this;
    }

    private Builder constrain(Constraint kind, String text) {
      constraint = kind;
      constraintText = text;
      return this;
    }

    /** IllegalArgumentException for a request valet.h cannot carry; the rest is checked on submit. */
    public Request build() {
      if ((prompt != null) == !messages.isEmpty()) {
        throw new IllegalArgumentException("a Request has chat messages or a prompt, not both, not neither");
      }
      noNul(systemPrompt, "the system prompt");
      for (Message m : messages) {
        noNul(m.role, "a message role");
        noNul(m.toolCallId, "a tool call id");
        for (ToolCall c : m.toolCalls) {
          noNul(c.id(), "a tool call id");
          noNul(c.name(), "a tool call's name");
          noNul(c.arguments(), "a tool call's arguments");
        }
      }
      for (Tool t : tools) {
        noNul(t.name, "a tool's name");
        noNul(t.description, "a tool's description");
        noNul(t.parameters, "a tool's parameters");
      }
      if (toolChoice == ToolChoice.NAMED && toolChoiceName == null) {
        throw new IllegalArgumentException("ToolChoice.NAMED names its tool: use toolChoice(String)");
      }
      noNul(toolChoiceName, "the tool choice");
      for (String s : stop) noNul(s, "a stop string");
      noNul(durableKey, "a durable key");
      noNul(constraintText, "a schema, grammar or regex");
      // Named here, so the app knows what to recover and acknowledge (each build() anew).
      return new Request(this, durable && durableKey == null ? "task-" + java.util.UUID.randomUUID() : durableKey);
    }

    private static <T> T required(T value, String what) {
      if (value == null) throw new NullPointerException(what + " is null");
      return value;
    }

    private static void noNul(String text, String what) {
      if (text != null && text.indexOf('\0') >= 0) {
        throw new IllegalArgumentException(what + " cannot hold U+0000");
      }
    }
  }
}
