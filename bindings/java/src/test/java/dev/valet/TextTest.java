package dev.valet;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Text crosses JNI as UTF-8 bytes: what Java tokenizes is exactly what the CLI tokenizes from a
 * file of the same bytes, with no modified UTF-8 on the way (U+0000 as one 0x00 byte, emoji as
 * four bytes, not six).
 */
class TextTest {
  // An emoji (outside the BMP), CJK, e + a combining acute, and U+0000 between two letters.
  private static final String MIXED = "Hi \uD83D\uDE00 \u4E2D\u6587 e\u0301 a\u0000b";
  // stories260K's vocabulary: byte fallback <0x00> is token 3 (after unk, BOS and EOS).
  private static final int NUL_BYTE_TOKEN = 3;

  private static int[] cliTokens(String model, byte[] text) throws Exception {
    final String cli = System.getProperty("valet.cli", "");
    Assumptions.assumeTrue(new File(cli).canExecute(), "skipped: valet CLI " + cli + " not found");
    final Path file = Files.createTempFile("valet-text-test", ".txt");
    try {
      Files.write(file, text);
      final Process p =
          new ProcessBuilder(cli, "tokenize", "-m", model, "--prompt-file", file.toString(), "--json")
              .redirectErrorStream(true)
              .start();
      final ByteArrayOutputStream out = new ByteArrayOutputStream();
      try (InputStream in = p.getInputStream()) {
        in.transferTo(out);
      }
      final String json = out.toString(StandardCharsets.UTF_8);
      assertEquals(0, p.waitFor(), json);
      final Matcher m = Pattern.compile("\\{\"tokens\":\\[([0-9,]*)\\]\\}\\s*").matcher(json);
      assertTrue(m.matches(), json);
      final List<Integer> ids = new ArrayList<>();
      for (String id : m.group(1).split(",")) ids.add(Integer.parseInt(id));
      return ids.stream().mapToInt(Integer::intValue).toArray();
    } finally {
      Files.delete(file);
    }
  }

  @Test
  void javaTokenizesWhatTheCliTokenizesAndSubmitFeedsAsMuch() throws Exception {
    final String model = TestModel.path();
    try (Valet valet = Valet.create(TestModel.options())) {
      final int[] ids = valet.tokenize(MIXED);
      assertArrayEquals(cliTokens(model, MIXED.getBytes(StandardCharsets.UTF_8)), ids);
      assertTrue(contains(ids, NUL_BYTE_TOKEN), "U+0000 reached the tokenizer as the byte 0x00");
      final TaskResult r =
          valet.submit(Request.builder().prompt(MIXED).maxTokens(1).build(), null).result().get();
      assertEquals(TaskState.DONE, r.state());
      assertEquals(ids.length, r.promptTokens());
      // A long text takes the second, exact-size pass in native code.
      final String longText = MIXED.repeat(2000);
      assertArrayEquals(cliTokens(model, longText.getBytes(StandardCharsets.UTF_8)), valet.tokenize(longText));
    }
  }

  private static boolean contains(int[] ids, int id) {
    for (int x : ids) {
      if (x == id) return true;
    }
    return false;
  }
}
