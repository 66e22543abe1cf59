package io.salus.blockdriver.nbd;

import static io.salus.blockdriver.nbd.NbdProtocol.*;
import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.metrics.BlockDriverMetrics;
import io.salus.blockdriver.volume.MemoryVolume;
import java.net.InetAddress;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/**
 * Review: a client that disconnects while its reads are held by a slow volume (longer than the
 * connection's drain wait, e.g. HBase retrying a dead region server while the kernel client
 * times out and reconnects) must give its buffer memory back when the reads finish. Before the
 * fix the completions were queued to the connection's reply thread after it had stopped, never
 * ran, and the buffers were lost to the server-wide cap for good: every later client got ENOMEM.
 */
class NbdDisconnectLeakTest {
  static final int MIB = 1 << 20;

  @Test
  void readsCompletingAfterDisconnectReleaseTheirBuffers() throws Exception {
    long savedDrain = NbdConnection.drainTimeoutMs;
    NbdConnection.drainTimeoutMs = 300;
    try {
      MemoryVolume mem = new MemoryVolume("vol", (64L * MIB) / 4096, 4096);
      byte[] pattern = new byte[MIB];
      Arrays.fill(pattern, (byte) 0x5a);
      mem.write(0, pattern, false).join();
      NbdBufferCapTest.GatedVolume vol = new NbdBufferCapTest.GatedVolume(mem);
      try (NbdServer server = new NbdServer(InetAddress.getLoopbackAddress(), 0,
          NbdExports.of(vol), new BlockDriverMetrics(), 8, 32L * MIB, 500).start()) {
        try (RawNbdClient gone = new RawNbdClient(server.port())) {
          gone.connect("vol", false);
          for (int i = 0; i < 16; i++) {
            gone.sendRequest(0, CMD_READ, i, (long) i * MIB, MIB, null); // 16 MiB held
          }
          Thread.sleep(300);
        } // the client vanishes with its reads in flight
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (server.activeConnections() > 0 && System.nanoTime() < deadline) {
          Thread.sleep(20);
        }
        assertEquals(0, server.activeConnections(), "the connection ended after its drain wait");
        vol.gate.complete(null); // the slow reads finish after the connection is gone
        Thread.sleep(300);
        try (RawNbdClient next = new RawNbdClient(server.port())) {
          next.connect("vol", false);
          // 32 MiB (the whole cap): served only if the vanished client's 16 MiB came back
          next.sendRequest(0, CMD_READ, 99, 0, 32 * MIB, null);
          RawNbdClient.Reply r = next.readReply(32 * MIB);
          assertEquals(0, r.error(), "buffer memory of a vanished client leaked: ENOMEM");
        }
      }
    } finally {
      NbdConnection.drainTimeoutMs = savedDrain;
    }
  }
}
