package io.salus.blockdriver.nbd;

import static io.salus.blockdriver.nbd.NbdProtocol.*;
import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.metrics.BlockDriverMetrics;
import io.salus.blockdriver.volume.MemoryVolume;
import java.net.InetAddress;
import java.util.Arrays;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A client that sends a large WRITE header and then only part of its payload (or none) must not
 * hold the server-wide buffer cap for good (review rv17n): once no byte of the payload arrives
 * for the payload timeout, its connection is closed and the memory returned, so every other
 * client is served again. The silent client's write was never acknowledged, so nothing is lost;
 * the volume keeps what was written before.
 */
class NbdSilentPayloadTest {
  static final int MIB = 1 << 20;
  static final long CAP = 32L * MIB; // one 32 MiB write payload fills it
  long savedTimeout;

  @BeforeEach
  void shortTimeout() {
    savedTimeout = NbdConnection.stallTimeoutMs;
    NbdConnection.stallTimeoutMs = 1000;
  }

  @AfterEach
  void restore() {
    NbdConnection.stallTimeoutMs = savedTimeout;
  }

  @Test
  void aClientStallingInsideAWritePayloadLosesItsConnectionNotTheServer() throws Exception {
    MemoryVolume mem = new MemoryVolume("vol", (64L * MIB) / 4096, 4096);
    byte[] before = new byte[MIB];
    Arrays.fill(before, (byte) 0x5a);
    BlockDriverMetrics metrics = new BlockDriverMetrics();
    try (NbdServer server = new NbdServer(InetAddress.getLoopbackAddress(), 0,
            NbdExports.of(mem), metrics, 8, CAP, 200).start();
        RawNbdClient silent = new RawNbdClient(server.port());
        RawNbdClient other = new RawNbdClient(server.port())) {
      silent.connect("vol", false);
      other.connect("vol", false);
      assertEquals(0, other.write(0, before, false));
      // 32 MiB WRITE header, 1 KiB of its payload, then nothing: the server has the whole cap
      // allocated for this payload
      silent.writeRequestHeader(0, CMD_WRITE, 7, 0, 32 * MIB);
      silent.out.write(new byte[1024]);
      silent.out.flush();
      Thread.sleep(300); // the server takes the buffer for the payload
      // another client's 1 MiB write needs pooled memory: refused (ENOMEM) while the silent
      // client holds it; once the payload timeout closes the silent connection it succeeds
      byte[] after = new byte[MIB];
      Arrays.fill(after, (byte) 0x3c);
      long deadline = System.nanoTime() + 15_000_000_000L;
      int err;
      int refusals = 0;
      do {
        err = other.write(MIB, after, false);
        if (err == ENOMEM) {
          refusals++;
        }
      } while (err != 0 && System.nanoTime() < deadline);
      assertEquals(0, err, "the other client's write never got buffer memory back ("
          + refusals + " ENOMEM replies): the silent client keeps the cap");
      assertTrue(silent.serverClosed(), "the stalled connection is closed");
      assertEquals(1, metrics.stalledConnections.sum());
      assertArrayEquals(before, other.read(0, MIB), "data written before is intact");
      assertArrayEquals(after, other.read(MIB, MIB));
      assertArrayEquals(new byte[MIB], other.read(32L * MIB - MIB, MIB),
          "nothing of the silent client's unacknowledged write landed");
    }
  }

  @Test
  void aSlowButSteadyPayloadIsNotCutOff() throws Exception {
    MemoryVolume mem = new MemoryVolume("vol", (8L * MIB) / 4096, 4096);
    try (NbdServer server = new NbdServer(InetAddress.getLoopbackAddress(), 0,
            NbdExports.of(mem), new BlockDriverMetrics(), 8, CAP, 200).start();
        RawNbdClient slow = new RawNbdClient(server.port())) {
      slow.connect("vol", false);
      byte[] data = new byte[MIB];
      Arrays.fill(data, (byte) 0x77);
      // 1 MiB dribbled over ~3 timeout periods, a piece every 300 ms: progress keeps it alive
      slow.writeRequestHeader(0, CMD_WRITE, 9, 0, MIB);
      int pieces = 10;
      for (int i = 0; i < pieces; i++) {
        slow.out.write(data, i * (MIB / pieces), i == pieces - 1 ? MIB - i * (MIB / pieces) : MIB / pieces);
        slow.out.flush();
        Thread.sleep(300);
      }
      RawNbdClient.Reply r = slow.readReply(0);
      assertEquals(9, r.handle());
      assertEquals(0, r.error());
      assertArrayEquals(data, slow.read(0, MIB));
    }
  }
}
