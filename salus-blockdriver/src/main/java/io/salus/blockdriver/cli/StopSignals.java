package io.salus.blockdriver.cli;

import java.io.PrintWriter;
import sun.misc.Signal;
import sun.misc.SignalHandler;

/**
 * SIGTERM and SIGINT handled explicitly, the same way, by long-running commands ({@code salus up},
 * {@code salus nbd}). A process started in the background by a non-interactive shell inherits
 * SIGINT as <em>ignored</em>, and the JVM then refuses to install a handler for it (it would
 * silently keep running on {@code kill -INT}); the {@code ./salus} script therefore restores the
 * default disposition before starting Java, and this class warns if SIGINT is still ignored.
 */
public final class StopSignals {
  private StopSignals() {
  }

  /** Runs {@code stop} on SIGTERM or SIGINT; returns false (after a warning) if INT is ignored. */
  public static boolean install(Runnable stop, PrintWriter err) {
    boolean intHandled = true;
    for (String sig : new String[] {"TERM", "INT"}) {
      SignalHandler old = Signal.handle(new Signal(sig), s -> stop.run());
      if (old == SignalHandler.SIG_IGN) {
        intHandled = false;
        err.println("warning: SIG" + sig + " is ignored in this process (inherited from the"
            + " shell that started it in the background), so 'kill -" + sig + "' cannot stop it;"
            + " start it through ./salus (which restores the default) or stop it with SIGTERM");
        err.flush();
      }
    }
    return intHandled;
  }
}
