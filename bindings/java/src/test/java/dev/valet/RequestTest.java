package dev.valet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Request mirrors valet_task_params: the same defaults, and every field reaches the scheduler. */
class RequestTest {
  @Test
  void defaultsAreTheCApis() {
    final long[] c = NativeLib.defaultTaskParams();
    final Request r = Request.builder().prompt("x").build();
    assertEquals(c[0], r.tier().ordinal());
    assertEquals(c[1], r.maxTokens());
    assertEquals(Float.intBitsToFloat((int) c[2]), r.temperature());
    assertEquals(c[3], r.topK());
    assertEquals(Float.intBitsToFloat((int) c[4]), r.topP());
    assertEquals(Float.intBitsToFloat((int) c[5]), r.minP());
    assertEquals(Float.intBitsToFloat((int) c[6]), r.repeatPenalty());
    assertEquals(c[7], r.seed());
  }

  @Test
  void requestsValetHCannotCarryAreRefusedWhenBuilt() {
    assertThrows(IllegalArgumentException.class, () -> Request.builder().build());
    assertThrows(IllegalArgumentException.class, () -> Request.builder().prompt("x").user("y").build());
    assertThrows(IllegalArgumentException.class, () -> Request.builder().prompt("x").systemPrompt("a\0b").build());
    assertThrows(IllegalArgumentException.class, () -> Request.builder().prompt("x").stop("a\0").build());
    assertThrows(IllegalArgumentException.class, () -> Request.builder().message("us\0er", "y").build());
    assertThrows(NullPointerException.class, () -> Request.builder().user(null));
    // A prompt or a message may hold U+0000: they cross with their lengths.
    Request.builder().prompt("a\0b").build();
    Request.builder().user("a\0b").build();
  }

  private static TaskResult run(Valet valet, Request.Builder b) throws Exception {
    final TaskResult r = valet.submit(b.build(), null).result().get();
    assertEquals(TaskState.DONE, r.state(), r.message());
    return r;
  }

  private static Request.Builder story() {
    return Request.builder().prompt("Once upon a time").maxTokens(24);
  }

  @Test
  void everyFieldReachesTheScheduler() throws Exception {
    try (Valet valet = Valet.create(TestModel.options())) {
      final TaskResult greedy = run(valet, story().temperature(0));
      assertEquals(24, greedy.tokens());
      // top_k 1 leaves one candidate: greedy at any temperature and seed.
      assertEquals(greedy.text(), run(valet, story().temperature(1.5f).topK(1).seed(7)).text());
      // The full chain at a high temperature: the seed decides.
      final Request.Builder wide = story().temperature(1.5f).topK(0).topP(1).minP(0).repeatPenalty(1.1f);
      assertEquals(run(valet, wide.seed(1)).text(), run(valet, wide.seed(1)).text());
      assertNotEquals(run(valet, wide.seed(1)).text(), run(valet, wide.seed(2)).text());
      // A stop string from the middle of the greedy text cuts it there.
      final String stop = greedy.text().substring(greedy.text().length() / 2).substring(0, 3);
      final TaskResult stopped = run(valet, story().temperature(0).stop(stop));
      assertTrue(stopped.tokens() < greedy.tokens());
      assertTrue(greedy.text().startsWith(stopped.text()));
      assertTrue(!stopped.text().contains(stop), stopped.text());
      // The shared system prompt and chat messages are part of the prompt.
      final int raw = run(valet, story().maxTokens(1)).promptTokens();
      final int withSystem = run(valet, story().maxTokens(1).systemPrompt("A tale.")).promptTokens();
      assertTrue(withSystem > raw, withSystem + " vs " + raw);
      final int chat =
          run(valet, Request.builder().system("Be brief.").user("Once upon a time").maxTokens(1)).promptTokens();
      assertTrue(chat > raw, chat + " vs " + raw);
      assertEquals(Tier.INLINE_SUGGESTION, valet.submit(story().tier(Tier.INLINE_SUGGESTION).build(), null).tier());
      valet.waitIdle();
      assertEquals(1, valet.stats().tier(Tier.INLINE_SUGGESTION).done());
    }
  }
}
