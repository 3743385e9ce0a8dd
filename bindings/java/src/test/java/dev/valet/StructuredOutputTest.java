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
