package io.salus.blockdriver.launcher;

/**
 * A start-up problem the operator can fix. The message names the problem and the fix; the CLI
 * prints it without a stack trace and exits non-zero.
 */
public final class LauncherException extends Exception {
  public LauncherException(String message) {
    super(message);
  }

  public LauncherException(String message, Throwable cause) {
    super(message, cause);
  }
}
