package io.salus.blockdriver.nbd;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.volume.MemoryVolume;
import java.net.InetAddress;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * NBD_CMD_DISC flushes the volume before the connection closes. A flush that never completes
 * (a hung cluster) kept the connection, its slot and its threads forever: the wait had no bound,
 * unlike the drain of requests in flight just before it.
 */
class NbdDiscHungFlushTest {

  @Test
  void aHungFlushOnDisconnectDoesNotHoldTheConnectionForever() throws Exception {
    long savedDrain = NbdConnection.drainTimeoutMs;
    NbdConnection.drainTimeoutMs = 300;
    CompletableFuture<Void> never = new CompletableFuture<>();
    ForwardingVolume vol = new ForwardingVolume(new MemoryVolume("vol", 256, 4096)) {
      @Override
      public CompletableFuture<Void> flush() {
        return never;
      }
    };
    try (NbdServer server = new NbdServer(InetAddress.getLoopbackAddress(), 0,
            NbdExports.of(vol)).start();
        RawNbdClient c = new RawNbdClient(server.port())) {
      c.connect("vol", false);
      assertEquals(0, c.write(0, new byte[4096], false));
      c.disconnect();
      long deadline = System.nanoTime() + 20_000_000_000L; // a liveness bound, not a timing check
      while (server.activeConnections() > 0 && System.nanoTime() < deadline) {
        Thread.sleep(50);
      }
      assertEquals(0, server.activeConnections(),
          "a connection that sent DISC is still open: its reader waits for a flush that never ends");
    } finally {
      NbdConnection.drainTimeoutMs = savedDrain;
      never.complete(null);
    }
  }
}
