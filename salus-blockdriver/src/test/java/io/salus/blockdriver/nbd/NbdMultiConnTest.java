package io.salus.blockdriver.nbd;

import static io.salus.blockdriver.nbd.NbdProtocol.*;
import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.volume.MemoryVolume;
import io.salus.blockdriver.volume.Volume;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The export advertises CAN_MULTI_CONN, so sub-block writes from different connections to one
 * block must all survive: read-modify-write is serialized per volume, not per connection.
 */
class NbdMultiConnTest {
  static final int BS = 4096;
  static final int BLOCKS = 200;

  /**
   * A MemoryVolume whose reads complete a little later on another thread, as a remote store's
   * would (HBase): this widens the read-modify-write window so that a lost update shows up on
   * every run, not one in 200 blocks. The storage itself is the real MemoryVolume.
   */
  static final class SlowReadVolume extends ForwardingVolume {
    private final ExecutorService delay = Executors.newFixedThreadPool(4);

    SlowReadVolume(Volume d) {
      super(d);
    }

    @Override
    public CompletableFuture<byte[]> read(long f, int c) {
      CompletableFuture<byte[]> r = super.read(f, c);
      return r.thenApplyAsync(x -> {
        try {
          Thread.sleep(2);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        return x;
      }, delay);
    }

    void shutdown() {
      delay.shutdownNow();
    }
  }

  /** Sends {@code BLOCKS} pipelined 512-byte writes at {@code skew} inside each block. */
  static void writeHalves(RawNbdClient c, int skew, byte fill, CountDownLatch go)
      throws Exception {
    byte[] half = new byte[512];
    Arrays.fill(half, fill);
    go.await();
    for (int i = 0; i < BLOCKS; i++) {
      c.sendRequest(0, CMD_WRITE, i, (long) i * BS + skew, half.length, half);
    }
    for (int i = 0; i < BLOCKS; i++) {
      RawNbdClient.Reply r = c.readReply(0);
      assertEquals(0, r.error(), "write reply for handle " + r.handle());
    }
  }

  @Test
  void disjointHalvesFromTwoConnectionsBothSurvive() throws Exception {
    MemoryVolume mem = new MemoryVolume("vol", 1024, BS);
    SlowReadVolume vol = new SlowReadVolume(mem);
    ExecutorService writers = Executors.newFixedThreadPool(2);
    try (NbdServer server = new NbdServer(InetAddress.getLoopbackAddress(), 0,
            NbdExports.of(vol)).start();
        RawNbdClient a = new RawNbdClient(server.port());
        RawNbdClient b = new RawNbdClient(server.port())) {
      a.connect("vol", false);
      b.connect("vol", false);
      assertTrue((a.transmissionFlags & TFLAG_CAN_MULTI_CONN) != 0);
      CountDownLatch go = new CountDownLatch(1);
      List<Future<?>> fs = new ArrayList<>();
      fs.add(writers.submit(() -> {
        writeHalves(a, 0, (byte) 0xaa, go);
        return null;
      }));
      fs.add(writers.submit(() -> {
        writeHalves(b, 512, (byte) 0xbb, go);
        return null;
      }));
      go.countDown();
      for (Future<?> f : fs) {
        f.get(120, TimeUnit.SECONDS);
      }
      int lost = 0;
      for (int i = 0; i < BLOCKS; i++) {
        byte[] blk = mem.read(i, 1).join();
        boolean ok = true;
        for (int j = 0; j < BS; j++) {
          byte want = j < 512 ? (byte) 0xaa : j < 1024 ? (byte) 0xbb : 0;
          ok &= blk[j] == want;
        }
        lost += ok ? 0 : 1;
      }
      assertEquals(0, lost, "blocks that lost one connection's half");
    } finally {
      writers.shutdownNow();
      vol.shutdown();
    }
  }
}
