package dev.valet;

/**
 * Receives what valet has to report but cannot throw to anyone: the native library's warnings and
 * errors (a snapshot kept in RAM because the disk failed, a corrupt snapshot), a listener's
 * exception (which is then dropped), a failure while delivering a callback, a {@link Valet} freed
 * because it was never closed. Set one with {@link Valet#setLogHandler}; without one, messages and
 * stack traces go to Android's log (tag "valet") or, off Android, to stderr.
 *
 * <p>The native library's messages arrive on its logger thread ("valet-log"), one at a time and in
 * order, never on the thread that met the problem, so a slow handler cannot stall inference; up to
 * 256 wait for it, beyond that they are dropped and counted ("valet: N log messages dropped").
 * Java-side reports arrive on whichever thread met the problem, often the scheduler's worker: keep
 * it short. An exception thrown here is written to the default log instead.
 */
public interface LogHandler {
  /** android.util.Log's priorities: WARN for dropped listener exceptions, ERROR otherwise. */
  int INFO = 4;

  int WARN = 5;

  int ERROR = 6;

  /**
   * @param error the exception being reported, with its stack trace; null when there is none
   */
  void log(int priority, String message, Throwable error);
}
