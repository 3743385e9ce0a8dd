package dev.valet;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * Text as the C API takes it: UTF-8 bytes. String.getBytes would turn a lone surrogate into '?'
 * and send the model text the app never wrote, so such a string is refused instead.
 */
final class Utf8 {
  private Utf8() {}

  /** The UTF-8 bytes of s (null: null); IllegalArgumentException naming `what` for invalid UTF-16. */
  static byte[] encode(String s, String what) {
    if (s == null) return null;
    try {
      final ByteBuffer b =
          StandardCharsets.UTF_8
              .newEncoder()
              .onMalformedInput(CodingErrorAction.REPORT)
              .onUnmappableCharacter(CodingErrorAction.REPORT)
              .encode(CharBuffer.wrap(s));
      final byte[] out = new byte[b.remaining()];
      b.get(out);
      return out;
    } catch (CharacterCodingException e) {
      throw new IllegalArgumentException(
          what + " is not valid UTF-16: a lone surrogate at index " + loneSurrogate(s), e);
    }
  }

  private static int loneSurrogate(String s) {
    for (int i = 0; i < s.length(); ++i) {
      final char c = s.charAt(i);
      if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
        ++i;
      } else if (Character.isSurrogate(c)) {
        return i;
      }
    }
    return -1;
  }
}
