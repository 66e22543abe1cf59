package io.salus.blockdriver.nbd;

import static io.salus.blockdriver.nbd.NbdProtocol.*;
import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.volume.BlockCorruptedException;
import io.salus.blockdriver.volume.MemoryVolume;
import io.salus.blockdriver.volume.Volume;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Protocol-level tests of the NBD server against a MemoryVolume, using a raw wire client. */
class NbdServerTest {
  static final int SIZE = 16 << 20;
  MemoryVolume vol;
  NbdServer server;

  @BeforeEach
  void start() throws Exception {
    vol = new MemoryVolume("vol", SIZE / 4096, 4096);
    server = new NbdServer(InetAddress.getLoopbackAddress(), 0, NbdExports.of(vol)).start();
  }

  @AfterEach
  void stop() {
    server.close();
    vol.close();
  }

  @Test
  void handshakeAdvertisesExportAndBlockSizes() throws Exception {
    try (RawNbdClient c = new RawNbdClient(server.port())) {
      int flags = c.greet(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES);
      assertEquals(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES, flags);
      c.sendOption(OPT_INFO, RawNbdClient.infoRequest("vol", INFO_BLOCK_SIZE, INFO_NAME));
      boolean sawExport = false;
      boolean sawBlock = false;
      boolean sawName = false;
      while (true) {
        RawNbdClient.OptReply r = c.readOptReply();
        if (r.type() == REP_ACK) {
          break;
        }
        assertEquals(REP_INFO, r.type());
        ByteBuffer b = ByteBuffer.wrap(r.data());
        int info = b.getShort();
        if (info == INFO_EXPORT) {
          assertEquals(SIZE, b.getLong());
          int tf = b.getShort() & 0xffff;
          assertTrue((tf & TFLAG_SEND_FLUSH) != 0 && (tf & TFLAG_SEND_FUA) != 0
              && (tf & TFLAG_SEND_TRIM) != 0 && (tf & TFLAG_SEND_WRITE_ZEROES) != 0);
          assertEquals(0, tf & TFLAG_READ_ONLY);
          sawExport = true;
        } else if (info == INFO_BLOCK_SIZE) {
          assertEquals(512, b.getInt());
          assertEquals(4096, b.getInt());
          assertEquals(32 << 20, b.getInt());
          sawBlock = true;
        } else if (info == INFO_NAME) {
          byte[] n = new byte[b.remaining()];
          b.get(n);
          assertEquals("vol", new String(n, StandardCharsets.UTF_8));
          sawName = true;
        }
      }
      assertTrue(sawExport && sawBlock && sawName);
      // unknown export, unsupported option, LIST
      c.sendOption(OPT_GO, RawNbdClient.infoRequest("nope"));
      assertEquals(REP_ERR_UNKNOWN, c.readOptReply().type());
      c.sendOption(OPT_STARTTLS, new byte[0]);
      assertEquals(REP_ERR_UNSUP, c.readOptReply().type());
      c.sendOption(42, new byte[] {1, 2, 3});
      assertEquals(REP_ERR_UNSUP, c.readOptReply().type());
      c.sendOption(OPT_LIST, new byte[0]);
      RawNbdClient.OptReply s = c.readOptReply();
      assertEquals(REP_SERVER, s.type());
      assertEquals("vol", new String(s.data(), 4, s.data().length - 4, StandardCharsets.UTF_8));
      assertEquals(REP_ACK, c.readOptReply().type());
      c.sendOption(OPT_LIST, new byte[] {9});
      assertEquals(REP_ERR_INVALID, c.readOptReply().type());
      c.sendOption(OPT_GO, new byte[] {0, 0, 0, 9, 1}); // name length beyond data
      assertEquals(REP_ERR_INVALID, c.readOptReply().type());
      c.sendOption(OPT_ABORT, new byte[0]);
      assertEquals(REP_ACK, c.readOptReply().type());
      assertTrue(c.serverClosed());
    }
  }

  @Test
  void exportNameFallbackWithSimpleReplies() throws Exception {
    try (RawNbdClient c = new RawNbdClient(server.port())) {
      c.greet(FLAG_C_FIXED_NEWSTYLE); // zeroes wanted
      c.sendOption(OPT_EXPORT_NAME, "vol".getBytes(StandardCharsets.UTF_8));
      assertEquals(SIZE, c.in.readLong());
      int tf = c.in.readUnsignedShort();
      assertTrue((tf & TFLAG_HAS_FLAGS) != 0);
      c.in.readFully(new byte[124]);
      byte[] data = pattern(8192, 7);
      assertEquals(0, c.write(4096, data, true));
      assertArrayEquals(data, c.read(4096, 8192));
      c.disconnect();
      assertTrue(c.serverClosed());
    }
    try (RawNbdClient c = new RawNbdClient(server.port())) {
      c.greet(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES);
      c.sendOption(OPT_EXPORT_NAME, "missing".getBytes(StandardCharsets.UTF_8));
      assertTrue(c.serverClosed(), "unknown export via EXPORT_NAME closes the connection");
    }
  }

  @Test
  void pipelinedRequestsAllAnsweredWithMatchingHandles() throws Exception {
    try (RawNbdClient c = new RawNbdClient(server.port())) {
      c.connect("vol", true);
      int n = 200;
      for (int i = 0; i < n; i++) {
        c.sendRequest(0, CMD_WRITE, 1000 + i, (long) i * 4096, 4096, pattern(4096, i));
      }
      Set<Long> handles = new HashSet<>();
      for (int i = 0; i < n; i++) {
        RawNbdClient.Reply r = c.readReply(0);
        assertEquals(0, r.error());
        handles.add(r.handle());
      }
      assertEquals(n, handles.size());
      for (int i = 0; i < n; i++) {
        c.sendRequest(0, CMD_READ, 5000 + i, (long) i * 4096, 4096, null);
      }
      for (int i = 0; i < n; i++) {
        RawNbdClient.Reply r = c.readReply(4096);
        int idx = (int) (r.handle() - 5000);
        assertArrayEquals(pattern(4096, idx), r.data(), "block " + idx);
      }
      c.sendRequest(0, CMD_FLUSH, 9, 0, 0, null);
      assertEquals(0, c.readReply(0).error());
    }
  }

  @Test
  void malformedRequestsGetSpecErrors() throws Exception {
    byte[] prior = pattern(4096, 99);
    try (RawNbdClient c = new RawNbdClient(server.port())) {
      c.connect("vol", true);
      assertEquals(0, c.write(0, prior, false));
      c.sendRequest(0, CMD_READ, 1, SIZE - 512, 4096, null);
      assertEquals(EINVAL, c.readReply(0).error(), "read beyond end");
      c.sendRequest(0, CMD_WRITE, 2, SIZE, 512, new byte[512]);
      assertEquals(ENOSPC, c.readReply(0).error(), "write beyond end");
      c.sendRequest(0, CMD_TRIM, 3, Long.MAX_VALUE - 10, 4096, null);
      assertEquals(EINVAL, c.readReply(0).error(), "trim beyond end");
      c.sendRequest(0, 77, 4, 0, 0, null);
      assertEquals(EINVAL, c.readReply(0).error(), "unknown command");
      c.sendRequest(0, CMD_BLOCK_STATUS, 5, 0, 4096, null);
      assertEquals(EINVAL, c.readReply(0).error(), "block status not negotiated");
      c.sendRequest(1 << 9, CMD_READ, 6, 0, 4096, null);
      assertEquals(EINVAL, c.readReply(0).error(), "unknown flag");
      c.sendRequest(0, CMD_READ, 7, 0, 0, null);
      assertEquals(EINVAL, c.readReply(0).error(), "zero length");
      c.sendRequest(0, CMD_READ, 8, 0, 64 << 20, null);
      assertEquals(EINVAL, c.readReply(0).error(), "read above maximum");
      // still usable
      assertArrayEquals(prior, c.read(0, 4096));
      // oversized write payload: error, then clean disconnect
      c.sendRequest(0, CMD_WRITE, 9, 0, 64 << 20, null);
      assertEquals(EINVAL, c.readReply(0).error());
      assertTrue(c.serverClosed());
    }
    try (RawNbdClient c = new RawNbdClient(server.port())) {
      c.connect("vol", false);
      c.out.writeInt(0xdeadbeef);
      c.out.write(new byte[24]);
      c.out.flush();
      assertTrue(c.serverClosed(), "bad magic disconnects");
    }
    try (RawNbdClient c = new RawNbdClient(server.port())) {
      c.connect("vol", false);
      // client vanishes in the middle of a write payload
      c.writeRequestHeader(0, CMD_WRITE, 1, 0, 4096);
      c.out.write(new byte[100]);
      c.out.flush();
    }
    try (RawNbdClient c = new RawNbdClient(server.port())) {
      c.connect("vol", false);
      assertArrayEquals(prior, c.read(0, 4096), "half-sent write must not change the volume");
    }
    assertTrue(server.metrics().malformedRequests.sum() >= 8);
  }

  @Test
  void unalignedWritesUseReadModifyWriteAndDoNotLoseBytes() throws Exception {
    try (RawNbdClient c = new RawNbdClient(server.port())) {
      c.connect("vol", true);
      // 8 concurrent 512-byte writes into one 4 KiB block, plus a write spanning blocks
      for (int i = 0; i < 8; i++) {
        byte[] d = new byte[512];
        java.util.Arrays.fill(d, (byte) (i + 1));
        c.sendRequest(0, CMD_WRITE, i, 40960 + i * 512L, 512, d);
      }
      byte[] span = pattern(5000, 3);
      c.sendRequest(CMD_FLAG_FUA, CMD_WRITE, 100, 81920 + 1000, 5000, span);
      for (int i = 0; i < 9; i++) {
        assertEquals(0, c.readReply(0).error());
      }
      byte[] blk = c.read(40960, 4096);
      for (int i = 0; i < 8; i++) {
        assertEquals(i + 1, blk[i * 512]);
        assertEquals(i + 1, blk[i * 512 + 511]);
      }
      assertArrayEquals(span, c.read(81920 + 1000, 5000));
      assertArrayEquals(new byte[1000], c.read(81920, 1000));
      // unaligned write-zeroes and trim
      c.sendRequest(0, CMD_WRITE_ZEROES, 1, 81920 + 1500, 3000, null);
      assertEquals(0, c.readReply(0).error());
      byte[] after = c.read(81920 + 1000, 5000);
      for (int i = 0; i < 5000; i++) {
        byte want = (i >= 500 && i < 3500) ? 0 : span[i];
        assertEquals(want, after[i], "byte " + i);
      }
      c.sendRequest(0, CMD_TRIM, 2, 40960, 4096, null);
      assertEquals(0, c.readReply(0).error());
      assertArrayEquals(new byte[4096], c.read(40960, 4096));
    }
  }

  @Test
  void verificationFailureBecomesEioAndOtherBlocksStillRead() throws Exception {
    // A volume wrapper that reports block 3 as corrupted (the HBase end-to-end test in `it`
    // corrupts real stored bytes; here we check the NBD error mapping only).
    Volume bad = new ForwardingVolume(vol) {
      @Override
      public CompletableFuture<byte[]> read(long firstBlock, int count) {
        if (firstBlock <= 3 && 3 < firstBlock + count) {
          return CompletableFuture.failedFuture(
              new BlockCorruptedException("vol", 3, "test corruption"));
        }
        return super.read(firstBlock, count);
      }
    };
    try (NbdServer s2 = new NbdServer(InetAddress.getLoopbackAddress(), 0, NbdExports.of(bad))
        .start();
        RawNbdClient c = new RawNbdClient(s2.port())) {
      byte[] good = pattern(4096, 44);
      vol.write(4, good, false).join();
      c.connect("vol", true);
      c.sendRequest(0, CMD_READ, 1, 3 * 4096, 4096, null);
      assertEquals(EIO, c.readReply(4096).error());
      assertArrayEquals(good, c.read(4 * 4096, 4096), "the good block's bytes");
      assertEquals(1, s2.metrics().eioReplies.sum());
    }
  }

  /** An export whose volume cannot be opened (e.g. its mount was refused) says why. */
  @Test
  void refusedMountIsExplainedInTheOptionReply() throws Exception {
    NbdExports refusing = new NbdExports() {
      @Override
      public Volume resolve(String exportName) {
        throw new io.salus.blockdriver.volume.VolumeException.RootMismatch(
            "volume 'vol': the volume tree rebuilt from storage does not match");
      }

      @Override
      public java.util.Collection<String> names() {
        return java.util.List.of("vol");
      }
    };
    try (NbdServer s2 = new NbdServer(InetAddress.getLoopbackAddress(), 0, refusing).start();
        RawNbdClient c = new RawNbdClient(s2.port())) {
      c.greet(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES);
      c.sendOption(OPT_GO, RawNbdClient.infoRequest("vol"));
      RawNbdClient.OptReply r = c.readOptReply();
      assertEquals(REP_ERR_UNKNOWN, r.type());
      String msg = new String(r.data(), StandardCharsets.UTF_8);
      assertTrue(msg.contains("does not match"), msg);
    }
  }

  static byte[] pattern(int len, int seed) {
    byte[] b = new byte[len];
    new Random(seed).nextBytes(b);
    return b;
  }
}
