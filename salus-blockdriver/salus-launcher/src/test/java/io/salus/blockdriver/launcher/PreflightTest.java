package io.salus.blockdriver.launcher;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import org.junit.jupiter.api.Test;

class PreflightTest {
  @Test
  void freePortsLieBelowTheEphemeralRangeAndCanBeBound() throws Exception {
    int[] ephemeral = Preflight.ephemeralRange();
    assertTrue(ephemeral[0] > 1024 && ephemeral[0] <= ephemeral[1],
        "ephemeral range " + ephemeral[0] + "-" + ephemeral[1]);
    boolean roomBelow = ephemeral[0] - 1 - Preflight.FIXED_PORTS_FLOOR >= 1000;
    for (int i = 0; i < 20; i++) {
      int port = Preflight.freePort("127.0.0.1");
      if (roomBelow) {
        assertTrue(port >= Preflight.FIXED_PORTS_FLOOR && port < ephemeral[0],
            "port " + port + " should lie in [" + Preflight.FIXED_PORTS_FLOOR + ", " + ephemeral[0] + ")");
      }
      try (ServerSocket s = new ServerSocket()) {
        s.setReuseAddress(true);
        s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
      }
    }
  }

  @Test
  void busyPortIsReportedWithTheOptionToChange() throws Exception {
    try (ServerSocket busy = new ServerSocket()) {
      busy.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
      LauncherException e = assertThrows(LauncherException.class, () -> Preflight.checkPortFree(
          "127.0.0.1", busy.getLocalPort(), "NBD server", "--nbd-port"));
      assertTrue(e.getMessage().contains("already in use") && e.getMessage().contains("--nbd-port"),
          e.getMessage());
    }
  }
}
