package dev.valet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/**
 * A model inside another file, as an APK's uncompressed asset is (descriptor, start offset,
 * length): loaded from an int descriptor or a java.io.FileDescriptor, it generates what the file
 * does by path.
 */
class ModelDescriptorTest {
  private static String greedy(Valet.Options options) throws Exception {
    try (Valet valet = Valet.create(options.threads(1).kvCapacityBytes(4L << 20))) {
      final Request r = Request.builder().prompt("Once upon a time").maxTokens(16).temperature(0).build();
      final TaskResult result = valet.submit(r, null).result().get();
      assertEquals(TaskState.DONE, result.state());
      return result.text();
    }
  }

  /** The model behind `lead` junk bytes and before 100 more, in a temporary file. */
  private static Path embed(byte[] model, int lead) throws Exception {
    final Path file = Files.createTempFile("valet-apk-like", ".bin");
    try (FileOutputStream out = new FileOutputStream(file.toFile())) {
      final byte[] junk = new byte[lead];
      Arrays.fill(junk, (byte) 'j');
      out.write(junk);
      out.write(model);
      out.write(junk, 0, Math.min(lead, 100));
    }
    return file;
  }

  @Test
  void aRangeOfAnOpenFileLoadsLikeThePath() throws Exception {
    final String path = TestModel.path();
    final byte[] model = Files.readAllBytes(Paths.get(path));
    final String expected = greedy(new Valet.Options(path));
    // 4096 + 4 is mapped in place, 4096 + 1 read into memory (it would misalign the tensors).
    for (int lead : new int[] {4096 + 4, 4096 + 1}) {
      final Path file = embed(model, lead);
      try (FileInputStream in = new FileInputStream(file.toFile())) {
        assertEquals(
            expected,
            greedy(Valet.Options.fromDescriptor(in.getFD()).range(lead, model.length).modelName("asset")));
        final int fd = NativeLib.descriptorOf(in.getFD());
        assertEquals(expected, greedy(Valet.Options.fromDescriptor(fd).range(lead, -1)));  // UNKNOWN_LENGTH
      } finally {
        Files.delete(file);
      }
    }
  }

  @Test
  void badDescriptorsAndRangesAreClearErrors() throws Exception {
    final String path = TestModel.path();
    assertThrows(IllegalArgumentException.class, () -> Valet.Options.fromDescriptor(-1));
    assertThrows(IllegalStateException.class, () -> new Valet.Options(path).range(0, 10));
    final Path file = embed(Files.readAllBytes(Paths.get(path)), 8);
    try (FileInputStream in = new FileInputStream(file.toFile())) {
      assertThrows(IllegalArgumentException.class, () -> Valet.Options.fromDescriptor(in.getFD()).range(-1, 0));
      final ValetException past =
          assertThrows(
              ValetException.class,
              () -> Valet.create(Valet.Options.fromDescriptor(in.getFD()).range(1L << 40, 0).modelName("asset")));
      assertEquals(ValetException.OUT_OF_RANGE, past.status());
      assertTrue(past.getMessage().contains("asset: offset"), past.getMessage());
      final ValetException junk =
          assertThrows(ValetException.class, () -> Valet.create(Valet.Options.fromDescriptor(in.getFD())));
      assertEquals(ValetException.CORRUPT, junk.status());
    } finally {
      Files.delete(file);
    }
    final FileInputStream closed = new FileInputStream(path);
    closed.close();
    assertThrows(IllegalArgumentException.class, () -> Valet.Options.fromDescriptor(closed.getFD()));
  }
}
