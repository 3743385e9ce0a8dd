package dev.valet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Constraints from Java: a JSON Schema's output parses as the schema says whatever the seed, a
 * regex's matches it, and a schema keyword valet does not compile is refused at submit, named.
 * Tools: a required or named call comes back parsed with arguments under its schema, and an
 * earlier turn's call and result reach the template.
 */
class StructuredOutputTest {
  private static final String SCHEMA =
      "{\"type\":\"object\",\"properties\":{\"ok\":{\"type\":\"boolean\"},"
          + "\"n\":{\"type\":\"integer\",\"minimum\":10,\"maximum\":99}},"
          + "\"required\":[\"ok\",\"n\"],\"additionalProperties\":false}";

  private static Request.Builder sampled(long seed) {
    return Request.builder()
        .prompt("Once upon a time")
        .maxTokens(120)
        .temperature(1.0f)
        .topK(0)
        .topP(1.0f)
        .minP(0.0f)
        .seed(seed);
  }

  private static final String WEATHER =
      "{\"type\":\"object\",\"properties\":{\"city\":{\"enum\":[\"Oslo\",\"Paris\"]}},"
          + "\"required\":[\"city\"],\"additionalProperties\":false}";

  private static Request.Builder withTools(long seed) {
    return Request.builder()
        .user("Weather in Oslo?")
        .tool("get_weather", "The weather in a city.", WEATHER)
        .tool("ping", null, "{\"type\":\"object\",\"additionalProperties\":false}")
        .maxTokens(200)
        .temperature(1.0f)
        .topK(0)
        .topP(1.0f)
        .minP(0.0f)
        .seed(seed);
  }

  @Test
  void toolCallsComeBackParsed() throws Exception {
    final Pattern weather = Pattern.compile("\\{\"city\":\"(Oslo|Paris)\"\\}");
    try (Valet valet = Valet.create(TestModel.options())) {
      for (long seed = 1; seed <= 3; ++seed) {
        final TaskResult named = valet.submit(withTools(seed).toolChoice("get_weather").build(), null).result().get();
        assertEquals(1, named.toolCalls().size(), named.text());
        final ToolCall call = named.toolCalls().get(0);
        assertEquals("get_weather", call.name());
        assertTrue(weather.matcher(call.arguments()).matches(), call.arguments());
        assertEquals(9, call.id().length());
        assertEquals("", named.content());

        final Request required = withTools(seed).toolChoice(Request.ToolChoice.REQUIRED).build();
        final TaskResult any = valet.submit(required, null).result().get();
        assertEquals(1, any.toolCalls().size(), any.text());
      }
      final TaskResult none =
          valet.submit(withTools(1).toolChoice(Request.ToolChoice.NONE).maxTokens(8).build(), null).result().get();
      assertTrue(none.toolCalls().isEmpty());
      assertEquals(none.text(), none.content());

      final ToolCall earlier = new ToolCall("abc123XYZ", "get_weather", "{\"city\":\"Oslo\"}");
      final Request replay =
          withTools(1).assistant("", earlier).toolResult("abc123XYZ", "-3 C").maxTokens(1).build();
      final TaskResult first = valet.submit(withTools(1).maxTokens(1).build(), null).result().get();
      final TaskResult second = valet.submit(replay, null).result().get();
      assertEquals(TaskState.DONE, second.state());
      assertTrue(second.promptTokens() > first.promptTokens() + 10);

      final ValetException unknown =
          assertThrows(ValetException.class, () -> valet.submit(withTools(1).toolChoice("rm").build(), null));
      assertEquals(ValetException.INVALID_ARGUMENT, unknown.status());
    }
    assertThrows(
        IllegalArgumentException.class, () -> withTools(1).toolChoice(Request.ToolChoice.NAMED).build());
  }

  @Test
  void theBuilderCarriesOneConstraint() {
    final Request none = sampled(1).build();
    assertEquals(Request.Constraint.NONE, none.constraint());
    assertNull(none.constraintText());
    final Request schema = sampled(1).jsonSchema(SCHEMA).maxWhitespace(2).build();
    assertEquals(Request.Constraint.JSON_SCHEMA, schema.constraint());
    assertEquals(SCHEMA, schema.constraintText());
    assertEquals(2, schema.maxWhitespace());
    assertEquals(Request.Constraint.REGEX, sampled(1).jsonObject().regex("a+").build().constraint());
    assertThrows(IllegalArgumentException.class, () -> sampled(1).grammar("root ::= \"\0\"").build());
  }

  @Test
  void outputsFollowTheirConstraint() throws Exception {
    final Pattern card = Pattern.compile("\\{\"ok\":(true|false),\"n\":[1-9][0-9]\\}");
    try (Valet valet = Valet.create(TestModel.options())) {
      for (long seed = 1; seed <= 3; ++seed) {
        final TaskResult r = valet.submit(sampled(seed).jsonSchema(SCHEMA).build(), null).result().get();
        assertTrue(card.matcher(r.text()).matches(), r.text());
        final TaskResult re = valet.submit(sampled(seed).regex("[a-z]{3}-[0-9]{2}").build(), null).result().get();
        assertTrue(Pattern.matches("[a-z]{3}-[0-9]{2}", re.text()), re.text());
      }
      final ValetException e =
          assertThrows(
              ValetException.class,
              () -> valet.submit(sampled(1).jsonSchema("{\"type\":\"integer\",\"multipleOf\":2}").build(), null));
      assertEquals(ValetException.UNSUPPORTED, e.status());
      assertTrue(e.getMessage().contains("multipleOf"), e.getMessage());
    }
  }
}
