package dev.valet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Packed weights as a file from Java: the first Valet with a weights cache packs and writes it, the
 * next maps it without repacking (Stats' weight counters), and removeWeightsCache removes it.
 */
class WeightsCacheTest {
  @TempDir Path dir;

  /** A quantized model beside the shared test model (stories260K is f32: nothing to pack). */
  private static String quantizedModel() {
    final File f = new File(new File(TestModel.path()).getParentFile(), "synth-tiny-q4_0.gguf");
    Assumptions.assumeTrue(f.isFile(), "skipped: model " + f + " not found");
    return f.getPath();
  }

  private static long caches(Path dir) throws IOException {
    try (Stream<Path> files = Files.list(dir)) {
      return files.filter(p -> p.toString().endsWith(".weights")).count();
    }
  }

  @Test
  void madeOnceThenMappedThenRemoved() throws Exception {
    final Valet.Options options =
        new Valet.Options(quantizedModel()).threads(1).kvCapacityBytes(4L << 20).weightsCache(dir.toString());
    final int packed;
    try (Valet valet = Valet.create(options)) {
      final Stats s = valet.stats();
      packed = s.weightsMatricesPacked;
      assertTrue(packed > 0);
      assertEquals(packed, s.weightsMatricesMapped);
      assertEquals(0, s.weightsAnonymousBytes);
      assertTrue(s.weightsFileBackedBytes > 0);
      assertTrue(s.scratchBytes > 0);
    }
    assertEquals(1, caches(dir));
    try (Valet valet = Valet.create(options)) {
      final Stats s = valet.stats();
      assertEquals(0, s.weightsMatricesPacked);
      assertEquals(packed, s.weightsMatricesMapped);
    }
    try (Valet valet = Valet.create(options.weightsCache(""))) {
      final Stats s = valet.stats();
      assertEquals(packed, s.weightsMatricesPacked);
      assertEquals(0, s.weightsMatricesMapped);
      assertTrue(s.weightsAnonymousBytes > 0);
    }
    Valet.removeWeightsCache(dir.toString());
    assertEquals(0, caches(dir));
  }
}
