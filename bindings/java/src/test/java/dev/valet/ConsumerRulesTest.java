package dev.valet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * R8 renames and removes what Java code does not reach; android/consumer-rules.pro must keep
 * everything the JNI glue reaches by name. This reads the glue's sources for those names (classes
 * it finds, methods it looks up, natives it defines) and requires each in the rules, so neither
 * side can change alone.
 */
class ConsumerRulesTest {
  private static final Pattern CLASS = Pattern.compile("\"dev/valet/(\\w+)\"");
  private static final Pattern METHOD =
      Pattern.compile("Get(?:Static)?MethodID\\([^,]+,\\s*\"([\\w<>]+)\",\\s*\"\\(([^)]*)\\)[^\"]*\"\\)");
  private static final Pattern NATIVE = Pattern.compile("Java_dev_valet_([A-Za-z]+)_(\\w+)\\(");

  private static String sources() throws Exception {
    final StringBuilder all = new StringBuilder();
    try (DirectoryStream<Path> files =
        Files.newDirectoryStream(Paths.get(System.getProperty("valet.jni.sources")), "*.cpp")) {
      for (Path f : files) all.append(new String(Files.readAllBytes(f), StandardCharsets.UTF_8));
    }
    return all.toString();
  }

  /** A JNI parameter descriptor ("I[B") as Java source types ("int, byte[]"). */
  static String javaTypes(String descriptor) {
    final List<String> types = new ArrayList<>();
    for (int i = 0; i < descriptor.length(); ) {
      int dims = 0;
      while (descriptor.charAt(i) == '[') {
        ++dims;
        ++i;
      }
      String type;
      final char c = descriptor.charAt(i);
      if (c == 'L') {
        final int end = descriptor.indexOf(';', i);
        type = descriptor.substring(i + 1, end).replace('/', '.');
        i = end + 1;
      } else {
        type = primitive(c);
        ++i;
      }
      types.add(type + "[]".repeat(dims));
    }
    return String.join(", ", types);
  }

  private static String primitive(char c) {
    switch (c) {
      case 'Z': return "boolean";
      case 'B': return "byte";
      case 'C': return "char";
      case 'S': return "short";
      case 'I': return "int";
      case 'J': return "long";
      case 'F': return "float";
      case 'D': return "double";
      default: throw new IllegalArgumentException("not a JNI type: " + c);
    }
  }

  @Test
  void everyNameTheJniGlueUsesIsKept() throws Exception {
    final String rules =
        new String(
            Files.readAllBytes(Paths.get(System.getProperty("valet.consumer.rules"))), StandardCharsets.UTF_8);
    final String glue = sources();
    int names = 0;
    for (Matcher m = CLASS.matcher(glue); m.find(); ++names) {
      assertTrue(rules.contains("class dev.valet." + m.group(1) + " "), "class dev.valet." + m.group(1));
    }
    for (Matcher m = METHOD.matcher(glue); m.find(); ++names) {
      final String member = m.group(1) + "(" + javaTypes(m.group(2)) + ");";
      assertTrue(rules.contains(member), member);
    }
    for (Matcher m = NATIVE.matcher(glue); m.find(); ++names) {
      final String keep = "class dev.valet." + m.group(1) + " {\n    native <methods>;";
      assertTrue(rules.contains(keep), "the natives of dev.valet." + m.group(1));
    }
    assertTrue(names >= 10, "found " + names + " names: the patterns still match the glue");
  }

  @Test
  void descriptorsReadAsJavaTypes() {
    assertEquals("long, int, int, byte[], byte[], int, double[], int[]", javaTypes("JII[B[BI[D[I"));
    assertEquals("int, byte[], java.lang.Throwable", javaTypes("I[BLjava/lang/Throwable;"));
  }
}
