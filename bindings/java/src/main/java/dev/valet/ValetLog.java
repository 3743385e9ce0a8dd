package dev.valet;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicLong;

/** Routes valet's reports to the app's {@link LogHandler}, else to the native default log. */
final class ValetLog {
  private static volatile LogHandler handler;
  private static final AtomicLong droppedListenerExceptions = new AtomicLong();

  private ValetLog() {}

  static void setHandler(LogHandler h) {
    handler = h;
  }

  static long droppedListenerExceptions() {
    return droppedListenerExceptions.get();
  }

  static void listenerThrew(Task task, String callback, Throwable error) {
    listenerThrew(task.knownId(), callback, error);
  }

  static void listenerThrew(long taskId, String callback, Throwable error) {
    droppedListenerExceptions.incrementAndGet();
    log(
        LogHandler.WARN,
        "the listener of task " + taskId + " threw from " + callback + "; the exception is dropped",
        error);
  }

  // Called from native code: an exception no Java caller would see (jni_util.cpp), and the
  // library's log on its logger thread (log_bridge.cpp), error null.
  static void fromNative(int priority, byte[] utf8, Throwable error) {
    log(priority, new String(utf8, StandardCharsets.UTF_8), error);
  }

  static void log(int priority, String message, Throwable error) {
    final LogHandler h = handler;
    if (h != null) {
      try {
        h.log(priority, message, error);
        return;
      } catch (Throwable t) {
        writeDefault(LogHandler.ERROR, "the LogHandler threw while reporting the next message", t);
      }
    }
    writeDefault(priority, message, error);
  }

  private static void writeDefault(int priority, String message, Throwable error) {
    final String text = error == null ? message : message + "\n" + stackTrace(error);
    NativeLib.log(priority, text.getBytes(StandardCharsets.UTF_8));
  }

  private static String stackTrace(Throwable error) {
    final StringWriter out = new StringWriter();
    error.printStackTrace(new PrintWriter(out));
    return out.toString();
  }
}
