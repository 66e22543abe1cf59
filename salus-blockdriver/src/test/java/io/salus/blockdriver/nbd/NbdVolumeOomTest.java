package io.salus.blockdriver.nbd;

import static io.salus.blockdriver.nbd.NbdProtocol.*;
import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.metrics.BlockDriverMetrics;
import io.salus.blockdriver.volume.MemoryVolume;
import io.salus.blockdriver.volume.Volume;
import java.io.IOException;
import java.net.InetAddress;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * A volume call that fails with {@link OutOfMemoryError} (MemoryVolume allocating a new off-heap
 * chunk past -XX:MaxDirectMemorySize, which the NBD buffer cap shares by default; SalusVolume or
 * HBaseVolume copying a 32 MiB payload into heap arrays) must not take the request's pooled
 * payload buffer with it: the buffer cap is server-wide, so each leaked buffer shrinks it for
 * every client until all of them get ENOMEM. The request should be answered ENOMEM (as
 * {@code errno} maps it) and the buffer returned.
 */
class NbdVolumeOomTest {
  static final int MIB = 1 << 20;
  static final long CAP = 32L * MIB;

  /** The real MemoryVolume whose writes or reads fail with OutOfMemoryError while armed. */
  static final class OomVolume extends ForwardingVolume {
    volatile boolean failWrites;
    volatile boolean failReads;

    OomVolume(Volume d) {
      super(d);
    }

    @Override
    public CompletableFuture<Void> write(long f, byte[] b, boolean fua) {
      if (failWrites) {
        throw new OutOfMemoryError("Cannot reserve 1048576 bytes of direct buffer memory");
      }
      return super.write(f, b, fua);
    }

    @Override
    public CompletableFuture<byte[]> read(long f, int c) {
      if (failReads) {
        throw new OutOfMemoryError("Java heap space");
      }
      return super.read(f, c);
    }
  }

  private static int replyOrDisconnect(RawNbdClient c, int readLength) {
    try {
      return c.readReply(readLength).error();
    } catch (IOException e) {
      return -1; // the server dropped the connection without answering
    }
  }

  @Test
  void aWriteFailingWithOutOfMemoryDoesNotLeakItsPayloadBuffer() throws Exception {
    MemoryVolume mem = new MemoryVolume("vol", (64L * MIB) / 4096, 4096);
    OomVolume vol = new OomVolume(mem);
    try (NbdServer server = new NbdServer(InetAddress.getLoopbackAddress(), 0,
        NbdExports.of(vol), new BlockDriverMetrics(), 8, CAP, 300).start()) {
      try (RawNbdClient a = new RawNbdClient(server.port())) {
        a.connect("vol", false);
        vol.failWrites = true;
        // 32 MiB: the whole cap in one pooled payload buffer
        a.sendRequest(0, CMD_WRITE, 1, 0, 32 * MIB, new byte[32 * MIB]);
        int err = replyOrDisconnect(a, 0);
        assertEquals(ENOMEM, err, "a write the volume could not store (OutOfMemoryError) should be"
            + " answered ENOMEM (-1: the server dropped the connection)");
        vol.failWrites = false;
      }
      byte[] data = new byte[MIB];
      Arrays.fill(data, (byte) 0x6b);
      try (RawNbdClient b = new RawNbdClient(server.port())) {
        b.connect("vol", false);
        // > 128 KiB: taken from the buffer pool
        assertEquals(0, b.write(0, data, false),
            "after one write failed with OutOfMemoryError every pooled request gets ENOMEM:"
                + " its payload buffer never went back to the server-wide cap");
        assertArrayEquals(data, b.read(0, MIB));
      }
    }
  }

  @Test
  void aReadFailingWithOutOfMemoryDoesNotLeakItsPayloadBuffer() throws Exception {
    MemoryVolume mem = new MemoryVolume("vol", (64L * MIB) / 4096, 4096);
    OomVolume vol = new OomVolume(mem);
    byte[] data = new byte[MIB];
    Arrays.fill(data, (byte) 0x2d);
    mem.write(0, data, false).join();
    try (NbdServer server = new NbdServer(InetAddress.getLoopbackAddress(), 0,
        NbdExports.of(vol), new BlockDriverMetrics(), 8, CAP, 300).start()) {
      try (RawNbdClient a = new RawNbdClient(server.port())) {
        a.connect("vol", false);
        vol.failReads = true;
        a.sendRequest(0, CMD_READ, 1, 0, 32 * MIB, null);
        int err = replyOrDisconnect(a, 32 * MIB);
        assertEquals(ENOMEM, err, "a read the volume could not serve (OutOfMemoryError) should be"
            + " answered ENOMEM (-1: the server dropped the connection)");
        vol.failReads = false;
      }
      try (RawNbdClient b = new RawNbdClient(server.port())) {
        b.connect("vol", false);
        b.sendRequest(0, CMD_READ, 2, 0, MIB, null);
        RawNbdClient.Reply r = b.readReply(MIB);
        assertEquals(0, r.error(),
            "after one read failed with OutOfMemoryError every pooled request gets ENOMEM:"
                + " its payload buffer never went back to the server-wide cap");
        assertArrayEquals(data, r.data());
      }
    }
  }
}
