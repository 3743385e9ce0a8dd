package dev.valet;

import java.nio.charset.StandardCharsets;

/** A failed call: {@link #status()} is valet.h's valet_status value. */
public final class ValetException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public static final int INVALID_ARGUMENT = 1;
  public static final int NOT_FOUND = 2;
  public static final int CORRUPT = 3;
  public static final int UNSUPPORTED = 4;
  public static final int OUT_OF_RANGE = 5;
  public static final int RESOURCE_EXHAUSTED = 6;
  public static final int IO = 7;
  public static final int INTERNAL = 8;
  public static final int ABORTED = 9;

  private final int status;

  public ValetException(int status, String message) {
    super(message);
    this.status = status;
  }

  // Thrown by native code (jni_util.cpp) with valet_last_error()'s UTF-8 bytes.
  ValetException(int status, byte[] utf8Message) {
    this(status, new String(utf8Message, StandardCharsets.UTF_8));
  }

  public int status() {
    return status;
  }
}
