package io.salus.blockdriver.nbd;

import static io.salus.blockdriver.nbd.NbdProtocol.*;
import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.volume.MemoryVolume;
import io.salus.blockdriver.volume.Volume;
import java.net.InetAddress;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Review rvw21-1: a sub-block write is read-modify-written under the volume's stripe locks, but a block-aligned write
 * of the same block takes no lock. If the aligned write is acknowledged between the read-modify-write's read and its
 * write, the read-modify-write writes the block's old bytes back over it: the bytes only the aligned write covered
 * are lost although it was acknowledged, a content no order of the two writes gives (aligned then sub-block: the
 * aligned bytes plus the sub-block bytes; sub-block then aligned: the aligned bytes everywhere).
 *
 * <p>Real NbdServer, real request path, two connections (the export advertises CAN_MULTI_CONN); the only
 * instrument is a gate on the read of block 5 (a remote store's read is slow: HBase, Salus GET).
 */
class NbdRmwRacesAlignedWriteTest {
  static final int BS = 4096;
  static final long BLOCK = 5;

  /** Holds the first read of {@link #BLOCK} until {@link #release} opens it (the rmw's read of the edge block). */
  static final class GatedReadVolume extends ForwardingVolume {
    final CountDownLatch reading = new CountDownLatch(1);
    final CountDownLatch release = new CountDownLatch(1);
    /** A whole-block write of {@link #BLOCK} reached the volume. */
    final CountDownLatch wholeWrite = new CountDownLatch(1);
    private volatile boolean gated = true;
    private final long gatedBlock;

    GatedReadVolume(Volume d) {
      this(d, BLOCK);
    }

    GatedReadVolume(Volume d, long gatedBlock) {
      super(d);
      this.gatedBlock = gatedBlock;
    }

    @Override
    public CompletableFuture<byte[]> read(long f, int c) {
      if (f == gatedBlock && c == 1 && gated) {
        gated = false;
        byte[] old = super.read(f, c).join(); // what the store holds when the read is served
        reading.countDown();
        return CompletableFuture.supplyAsync(() -> {
          try {
            release.await(60, TimeUnit.SECONDS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          return old; // arrives late, as a remote read's reply does
        });
      }
      return super.read(f, c);
    }

    @Override
    public CompletableFuture<Void> write(long f, byte[] b, boolean fua) {
      CompletableFuture<Void> r = super.write(f, b, fua);
      if (f <= gatedBlock && f + b.length / BS > gatedBlock && b[(int) (gatedBlock - f) * BS + BS - 1] == (byte) 0xbb) {
        wholeWrite.countDown();
      }
      return r;
    }
  }

  @Test
  void anAlignedWriteAcknowledgedDuringASubBlockWritesReadModifyWriteIsNotUndone() throws Exception {
    MemoryVolume mem = new MemoryVolume("vol", 64, BS);
    GatedReadVolume vol = new GatedReadVolume(mem);
    try (NbdServer server = new NbdServer(InetAddress.getLoopbackAddress(), 0, NbdExports.of(vol)).start();
        RawNbdClient a = new RawNbdClient(server.port());
        RawNbdClient b = new RawNbdClient(server.port())) {
      a.connect("vol", false);
      b.connect("vol", false);
      assertTrue((a.transmissionFlags & TFLAG_CAN_MULTI_CONN) != 0);
      byte[] head = new byte[100];
      Arrays.fill(head, (byte) 0xaa);
      // A: bytes [0, 100) of block 5: read-modify-write of block 5
      a.sendRequest(0, CMD_WRITE, 1, BLOCK * BS, head.length, head);
      assertTrue(vol.reading.await(30, TimeUnit.SECONDS), "the read-modify-write did not read block 5");
      // B: all of block 5, aligned, while A's read-modify-write holds the block's old bytes. On main it reaches
      // the volume (and is acknowledged) at once; a server that makes it wait for A never lets it through here,
      // so the gate opens after a while either way (not an assertion on time: it only lets the race happen)
      byte[] full = new byte[BS];
      Arrays.fill(full, (byte) 0xbb);
      b.sendRequest(0, CMD_WRITE, 2, BLOCK * BS, full.length, full);
      vol.wholeWrite.await(3, TimeUnit.SECONDS);
      vol.release.countDown();
      RawNbdClient.Reply ra = a.readReply(0);
      assertEquals(0, ra.error(), "sub-block write");
      RawNbdClient.Reply rb = b.readReply(0);
      assertEquals(0, rb.error(), "aligned write");
      byte[] blk = b.read(BLOCK * BS, BS);
      int lost = 0;
      for (int j = head.length; j < BS; j++) {
        lost += blk[j] == (byte) 0xbb ? 0 : 1;
      }
      assertEquals(0, lost, "bytes [100, 4096) of block 5 were written only by the acknowledged aligned write;"
          + " after both writes they hold " + String.format("0x%02x", blk[BS - 1]) + " instead of 0xbb");
    }
  }

  /**
   * The same with two sub-block writes: A writes bytes [100, 3 * 4096), so it read-modify-writes blocks 0..2 but
   * locked only the stripes of its edge blocks 0 and 2; B writes bytes [0, 10) of block 1, inside A's range. If A
   * is acknowledged while B's read-modify-write holds block 1's old bytes, B's write-back undoes A's bytes
   * [10, 4096) of block 1.
   */
  @Test
  void aSubBlockWriteInsideAnotherOnesMiddleBlockDoesNotUndoIt() throws Exception {
    MemoryVolume mem = new MemoryVolume("vol", 64, BS);
    GatedReadVolume vol = new GatedReadVolume(mem, 1);
    try (NbdServer server = new NbdServer(InetAddress.getLoopbackAddress(), 0, NbdExports.of(vol)).start();
        RawNbdClient a = new RawNbdClient(server.port());
        RawNbdClient b = new RawNbdClient(server.port())) {
      a.connect("vol", false);
      b.connect("vol", false);
      byte[] small = new byte[10];
      Arrays.fill(small, (byte) 0xaa);
      b.sendRequest(0, CMD_WRITE, 1, BS, small.length, small); // B: read-modify-write of block 1
      assertTrue(vol.reading.await(30, TimeUnit.SECONDS), "the read-modify-write did not read block 1");
      byte[] big = new byte[3 * BS - 100];
      Arrays.fill(big, (byte) 0xbb);
      a.sendRequest(0, CMD_WRITE, 2, 100, big.length, big); // A: blocks 0..2, block 1 all its own bytes
      vol.wholeWrite.await(3, TimeUnit.SECONDS); // (not an assertion on time: lets the race happen on main)
      vol.release.countDown();
      assertEquals(0, b.readReply(0).error(), "B");
      assertEquals(0, a.readReply(0).error(), "A");
      byte[] blk = a.read(BS, BS);
      int lost = 0;
      for (int j = small.length; j < BS; j++) {
        lost += blk[j] == (byte) 0xbb ? 0 : 1;
      }
      assertEquals(0, lost, "bytes [10, 4096) of block 1 were written only by A (acknowledged);"
          + " after both writes they hold " + String.format("0x%02x", blk[BS - 1]) + " instead of 0xbb");
    }
  }
}
