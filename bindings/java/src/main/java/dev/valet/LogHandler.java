package dev.valet;

/**
 * Receives what valet has to report but cannot throw to anyone: a listener's exception (which is
 * then dropped), a failure while delivering a callback, a {@link Valet} freed because it was never
 * closed. Set one with {@link Valet#setLogHandler}; without one, messages and stack traces go to
 * Android's log (tag "valet") or, off Android, to stderr.
 *
 * <p>Called on whichever thread met the problem, often the scheduler's worker: keep it short. An
 * exception thrown here is written to the default log instead.
 */
public interface LogHandler {
  /** android.util.Log's priorities: WARN for dropped listener exceptions, ERROR otherwise. */
  int WARN = 5;

  int ERROR = 6;

  /**
   * @param error the exception being reported, with its stack trace; null when there is none
   */
  void log(int priority, String message, Throwable error);
}
