package dev.valet;

/** A failed call: {@link #status()} is valet.h's valet_status value. */
public final class ValetException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public static final int INVALID_ARGUMENT = 1;
  public static final int NOT_FOUND = 2;
  public static final int OUT_OF_RANGE = 5;
  public static final int ABORTED = 9;

  private final int status;

  public ValetException(int status, String message) {
    super(message);
    this.status = status;
  }

  public int status() {
    return status;
  }
}
