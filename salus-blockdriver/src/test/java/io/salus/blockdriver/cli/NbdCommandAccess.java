package io.salus.blockdriver.cli;

import io.salus.blockdriver.volume.VolumeLease;
import java.io.PrintWriter;
import java.util.concurrent.CountDownLatch;

/** Test access to {@link NbdCommand}'s package-private serve loop. */
public final class NbdCommandAccess {
  private NbdCommandAccess() {
  }

  public static int awaitEnd(String volume, VolumeLease lease, CountDownLatch stop,
      Runnable close, PrintWriter err) throws InterruptedException {
    return NbdCommand.awaitEnd(volume, lease, stop, close, err);
  }
}
