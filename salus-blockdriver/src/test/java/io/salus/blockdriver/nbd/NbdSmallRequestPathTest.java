package io.salus.blockdriver.nbd;

import static io.salus.blockdriver.nbd.NbdProtocol.*;
import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.metrics.BlockDriverMetrics;
import io.salus.blockdriver.volume.MemoryVolume;
import java.io.File;
import java.net.InetAddress;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/**
 * The per-request path for small requests on a volume that completes synchronously
 * ({@link MemoryVolume}): a small aligned read is copied from the volume's views straight into
 * the reply buffer, so it takes no payload buffer from the pool (the 20:50 benchmark regression
 * was per-request work; this path has no pool, future or callback), and its data, errors and
 * metrics stay exactly right. Real client: qemu-io (structured replies); simple replies and
 * pipelining through the test's raw client.
 */
class NbdSmallRequestPathTest {
  private static final int MIB = 1 << 20;

  @Test
  void smallAlignedReadsTakeNoPayloadBufferAndReturnTheStoredBytes() throws Exception {
    // 4 MiB volume: chunk 0 written, chunk 1 written only in its first 4 KiB, chunks 2-3 never
    MemoryVolume vol = new MemoryVolume("vol", 4 * MIB / 4096, 4096);
    byte[] a = new byte[MIB];
    Arrays.fill(a, (byte) 0x11);
    vol.write(0, a, false).join();
    byte[] b = new byte[4096];
    Arrays.fill(b, (byte) 0x22);
    vol.write(MIB / 4096, b, false).join();
    BlockDriverMetrics metrics = new BlockDriverMetrics();
    try (NbdServer server = new NbdServer(InetAddress.getLoopbackAddress(), 0,
            NbdExports.of(vol), metrics, 8).start();
        RawNbdClient c = new RawNbdClient(server.port())) {
      c.connect("vol", false); // simple replies
      // pipelined: 32 small reads in flight, one spanning the chunk 0/1 boundary (two views),
      // one in a never-written chunk (the shared zero view)
      int n = 32;
      for (int i = 0; i < n; i++) {
        long off = i == 0 ? MIB - 8192 : i == 1 ? 3L * MIB : (long) i * 4096;
        c.sendRequest(0, CMD_READ, 1000 + i, off, 16384, null);
      }
      for (int i = 0; i < n; i++) {
        RawNbdClient.Reply r = c.readReply(16384);
        assertEquals(0, r.error(), "read " + r.handle());
        int k = (int) (r.handle() - 1000);
        byte[] want = new byte[16384];
        if (k == 0) {
          Arrays.fill(want, 0, 8192, (byte) 0x11);
          Arrays.fill(want, 8192, 12288, (byte) 0x22);
        } else if (k != 1) {
          Arrays.fill(want, (byte) 0x11);
        }
        assertArrayEquals(want, r.data(), "bytes of read " + k);
      }
      // an out-of-range read is still refused, not read
      c.sendRequest(0, CMD_READ, 7, 4L * MIB, 4096, null);
      assertEquals(EINVAL, c.readReply(4096).error());
      assertEquals(0, server.peakBufferBytes(),
          "small aligned reads from a volume with views must not take a pooled payload buffer");
      assertEquals(n, metrics.completed(BlockDriverMetrics.Op.READ), "READs completed");
      assertEquals(0, metrics.errors(BlockDriverMetrics.Op.READ));
      assertEquals(0, metrics.inFlight.sum(), "nothing left in flight");
    }
  }

  @Test
  void pipelinedSmallWritesFromTheReceiveBufferLandExactly() throws Exception {
    // small writes are handed to the volume as one reused read-only view of the receive buffer
    // (position > 0, not a slice) and written with absolute bulk puts into the volume's chunks:
    // every byte must land where its request said, across a chunk boundary and through the
    // unaligned read-modify-write path, and every request gets exactly one reply
    MemoryVolume vol = new MemoryVolume("vol", 4 * MIB / 4096, 4096);
    BlockDriverMetrics metrics = new BlockDriverMetrics();
    byte[] want = new byte[4 * MIB];
    try (NbdServer server = new NbdServer(InetAddress.getLoopbackAddress(), 0,
            NbdExports.of(vol), metrics, 8).start();
        RawNbdClient c = new RawNbdClient(server.port())) {
      c.connect("vol", true); // structured replies
      int n = 200;
      for (int i = 0; i < n; i++) {
        long off;
        int len;
        if (i == 0) {
          off = MIB - 4096; // spans chunks 0 and 1
          len = 8192;
        } else if (i % 10 == 3) {
          off = 2L * MIB + i * 1000L + 7; // unaligned: read-modify-write of its edge blocks
          len = 777;
        } else {
          off = 3L * MIB + (i % 100) * 4096L; // later writes overwrite earlier ones
          len = 4096;
        }
        byte[] p = new byte[len];
        Arrays.fill(p, (byte) (i + 1));
        p[0] = (byte) ~i;
        p[len - 1] = (byte) (i * 7);
        System.arraycopy(p, 0, want, (int) off, len);
        c.sendRequest(0, CMD_WRITE, 5000 + i, off, len, p);
      }
      boolean[] seen = new boolean[n];
      for (int i = 0; i < n; i++) {
        RawNbdClient.Reply r = c.readReply(0);
        assertEquals(0, r.error(), "write " + r.handle());
        int k = (int) (r.handle() - 5000);
        assertFalse(seen[k], "two replies to write " + k);
        seen[k] = true;
      }
      c.sendRequest(0, CMD_FLUSH, 9, 0, 0, null);
      assertEquals(0, c.readReply(0).error());
      assertEquals(n, metrics.completed(BlockDriverMetrics.Op.WRITE), "WRITEs completed");
      assertEquals(0, metrics.errors(BlockDriverMetrics.Op.WRITE));
      assertEquals(0, metrics.inFlight.sum(), "nothing left in flight");
    }
    assertArrayEquals(want, vol.read(0, 4 * MIB / 4096).join(), "volume contents");
  }

  @Test
  void withStructuredRepliesOnlyReadsAndErrorsGetStructuredReplies() throws Exception {
    // libnbd (fio, nbdcopy) reads a structured reply header with two recv calls and a simple one
    // with one: a successful WRITE/FLUSH/TRIM/WRITE_ZEROES is answered with the 16-byte simple
    // reply, as the NBD spec allows and nbdkit does; READ data and errors (with their message)
    // stay structured
    MemoryVolume vol = new MemoryVolume("vol", 4 * MIB / 4096, 4096);
    try (NbdServer server = new NbdServer(InetAddress.getLoopbackAddress(), 0,
            NbdExports.of(vol)).start();
        RawNbdClient c = new RawNbdClient(server.port())) {
      c.connect("vol", true);
      assertTrue(c.structured, "structured replies negotiated");
      byte[] p = new byte[4096];
      Arrays.fill(p, (byte) 9);
      c.sendRequest(0, CMD_WRITE, 1, 0, 4096, p);
      RawNbdClient.Reply w = c.readReply(0);
      assertEquals(-1, w.chunkType(), "a successful WRITE gets a simple reply");
      assertEquals(0, w.error());
      c.sendRequest(0, CMD_FLUSH, 2, 0, 0, null);
      assertEquals(-1, c.readReply(0).chunkType(), "a successful FLUSH gets a simple reply");
      c.sendRequest(0, CMD_WRITE_ZEROES, 3, 8192, 4096, null);
      assertEquals(-1, c.readReply(0).chunkType(), "a successful WRITE_ZEROES gets a simple reply");
      c.sendRequest(0, CMD_READ, 4, 0, 4096, null);
      RawNbdClient.Reply r = c.readReply(4096);
      assertEquals(REPLY_TYPE_OFFSET_DATA, r.chunkType(), "READ data stays structured");
      assertArrayEquals(p, r.data());
      c.sendRequest(0, CMD_WRITE, 5, 4L * MIB, 4096, p); // beyond the end
      RawNbdClient.Reply e = c.readReply(0);
      assertEquals(REPLY_TYPE_ERROR, e.chunkType(), "an error stays structured (it carries a message)");
      assertEquals(ENOSPC, e.error());
    }
  }

  @Test
  void aRequestWhosePayloadIsStillOnTheWayDoesNotHoldBackEarlierReplies() throws Exception {
    // the reader answers completed requests in batches and flushes the batch when it is about to
    // wait for the client. A request whose header arrived with the earlier ones but whose payload
    // has not must count as waiting: before, the earlier replies stayed in the server's buffer
    // until the payload came, so a client that sends the rest of a write only after its earlier
    // requests are answered (e.g. it reuses their buffers) waited forever
    MemoryVolume vol = new MemoryVolume("vol", 4 * MIB / 4096, 4096);
    try (NbdServer server = new NbdServer(InetAddress.getLoopbackAddress(), 0,
            NbdExports.of(vol)).start();
        RawNbdClient c = new RawNbdClient(server.port())) {
      c.connect("vol", false); // simple replies
      c.socket.setSoTimeout(10_000);
      byte[] first = new byte[4096];
      Arrays.fill(first, (byte) 1);
      byte[] second = new byte[4096];
      Arrays.fill(second, (byte) 2);
      // write 1 whole, then write 2's header and half its payload, in one send
      c.writeRequestHeader(0, CMD_WRITE, 1, 0, 4096);
      c.out.write(first);
      c.writeRequestHeader(0, CMD_WRITE, 2, 8192, 4096);
      c.out.write(second, 0, 2048);
      c.out.flush();
      RawNbdClient.Reply r1;
      try {
        r1 = c.readReply(0);
      } catch (java.net.SocketTimeoutException e) {
        throw new AssertionError("write 1's reply was held back while write 2's payload was on its way", e);
      }
      assertEquals(1, r1.handle());
      assertEquals(0, r1.error());
      c.out.write(second, 2048, 2048);
      c.out.flush();
      RawNbdClient.Reply r2 = c.readReply(0);
      assertEquals(2, r2.handle());
      assertEquals(0, r2.error());
    }
    byte[] got = vol.read(0, 3).join();
    assertArrayEquals(new byte[4096], Arrays.copyOfRange(got, 4096, 8192), "block 1 untouched");
    for (int i = 0; i < 4096; i++) {
      assertEquals(1, got[i], "block 0 byte " + i);
      assertEquals(2, got[8192 + i], "block 2 byte " + i);
    }
  }

  @Test
  void qemuIoSmallWritesAndReadsRoundTripWithExactMetrics() throws Exception {
    org.junit.jupiter.api.Assumptions.assumeTrue(new File("/usr/bin/qemu-io").canExecute(),
        "qemu-io (a real NBD client) is not installed");
    MemoryVolume vol = new MemoryVolume("vol", 4 * MIB / 4096, 4096);
    BlockDriverMetrics metrics = new BlockDriverMetrics();
    try (NbdServer server = new NbdServer(InetAddress.getLoopbackAddress(), 0,
        NbdExports.of(vol), metrics, 8).start()) {
      String uri = server.uri("vol");
      String out = NbdJmxMetricsTest.qemuIo(uri, "write -P 0x5a 0 4k", "write -P 0x6b 4k 4k",
          "read -P 0x5a 0 4k", "read -P 0x6b 4k 4k", "read -P 0 8k 4k", "read 4092k 8k");
      assertFalse(out.contains("Pattern verification failed"), out);
      assertEquals(2, metrics.completed(BlockDriverMetrics.Op.WRITE), out);
      assertEquals(0, metrics.errors(BlockDriverMetrics.Op.WRITE), out);
      // the read beyond the end is refused by qemu-io itself or by the server; the three
      // in-range reads are completed by the volume
      assertTrue(metrics.completed(BlockDriverMetrics.Op.READ) >= 3, out);
      assertEquals(0, metrics.inFlight.sum());
      assertEquals(0, server.peakBufferBytes(), "4 KiB reads and writes take no pooled buffer");
    }
  }
}
