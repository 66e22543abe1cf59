package io.salus.blockdriver.nbd;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.volume.MemoryVolume;
import java.io.File;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * A client host that vanishes (power loss, a VM killed, a cable pulled) never closes its TCP
 * connection. The server writes nothing to an idle connection, so without TCP keepalive it
 * never notices: the connection keeps its slot (at most 64), its reader and reply threads
 * forever, and after 64 such clients every new client is refused. The server's sockets must
 * have keepalive on (seen from outside with {@code ss -o}: a {@code timer:(keepalive,...)}).
 */
class NbdKeepAliveTest {

  @Test
  void serverSideSocketsProbeIdlePeers() throws Exception {
    Assumptions.assumeTrue(new File("/usr/bin/ss").canExecute() || new File("/bin/ss").canExecute(),
        "ss (iproute2) is needed to see the server socket's timers");
    MemoryVolume vol = new MemoryVolume("vol", 256, 4096);
    try (NbdServer server = new NbdServer(InetAddress.getLoopbackAddress(), 0,
            NbdExports.of(vol)).start();
        RawNbdClient c = new RawNbdClient(server.port())) {
      c.connect("vol", false);
      assertEquals(0, c.write(0, new byte[4096], false));
      String out = "";
      for (int i = 0; i < 50 && !out.contains("keepalive"); i++) {
        Process p = new ProcessBuilder("ss", "-tnoH", "state", "established",
            "( sport = :" + server.port() + " )").redirectErrorStream(true).start();
        out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        p.waitFor();
        if (!out.contains("keepalive")) {
          Thread.sleep(100);
        }
      }
      assertFalse(out.isBlank(), "ss shows no established server socket on " + server.port());
      assertTrue(out.contains("keepalive"),
          "the server's socket of an idle client has no keepalive timer, so a vanished client"
              + " holds its connection slot forever: " + out.trim());
    }
  }
}
