package dev.valet;

import java.io.File;
import org.junit.jupiter.api.Assumptions;

/** The shared model the tests run on (../shared/models/stories260K.gguf); a test skips without it. */
final class TestModel {
  private TestModel() {}

  static String path() {
    final String model = System.getProperty("valet.model", "");
    Assumptions.assumeTrue(new File(model).isFile(), "skipped: model " + model + " not found");
    return model;
  }

  /** Small and single-threaded: the tests share two cores with everything else. */
  static Valet.Options options() {
    return new Valet.Options(path()).threads(1).kvCapacityBytes(4L << 20);
  }
}
