package io.salus.blockdriver.nbd;

import static io.salus.blockdriver.nbd.NbdProtocol.*;
import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.volume.MemoryVolume;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Seeded fuzzing: 10,000 connections, each sending a random or malformed handshake and request
 * sequence (random bytes, wrong magics, bad option lengths, unknown options/commands, bad
 * flags, out-of-range offsets, truncated payloads, abrupt closes). Requests that could
 * legitimately modify data are confined to the upper half of the volume; afterwards the lower
 * half must still hold the data written before, and the server must still serve clients.
 */
class NbdFuzzTest {
  static final int BS = 4096;
  static final long SIZE = 8L << 20;
  static final long HALF = SIZE / 2;
  static final int SEQUENCES = 10_000;

  @Test
  void serverSurvivesTenThousandMalformedSequences() throws Exception {
    MemoryVolume vol = new MemoryVolume("fz", SIZE / BS, BS);
    byte[] prior = new byte[(int) HALF];
    new Random(1).nextBytes(prior);
    vol.write(0, prior, true).join();
    Random rnd = new Random(20261122L);
    try (NbdServer server = new NbdServer(InetAddress.getLoopbackAddress(), 0,
        NbdExports.of(vol)).start()) {
      for (int i = 0; i < SEQUENCES; i++) {
        byte[] script = sequence(rnd);
        runScript(server.port(), script, rnd.nextInt(4) == 0);
      }
      // the server is still up and the data written before is intact
      try (RawNbdClient c = new RawNbdClient(server.port())) {
        c.connect("fz", true);
        for (long off = 0; off < HALF; off += 1 << 20) {
          byte[] got = c.read(off, 1 << 20);
          byte[] want = java.util.Arrays.copyOfRange(prior, (int) off, (int) off + (1 << 20));
          assertArrayEquals(want, got, "prior data at " + off);
        }
        byte[] d = new byte[BS];
        new Random(5).nextBytes(d);
        assertEquals(0, c.write(HALF, d, true));
        assertArrayEquals(d, c.read(HALF, BS));
      }
      long bad = server.metrics().handshakeFailures.sum() + server.metrics().malformedRequests.sum();
      assertTrue(bad > SEQUENCES / 4, "fuzzer produced malformed input: " + server.metrics());
      // every connection got cleaned up
      long deadline = System.currentTimeMillis() + 10_000;
      while (server.activeConnections() > 0 && System.currentTimeMillis() < deadline) {
        Thread.sleep(20);
      }
      assertEquals(0, server.activeConnections());
    }
  }

  /** Sends the script, optionally reading (and discarding) whatever the server answers. */
  private static void runScript(int port, byte[] script, boolean drainReplies) throws IOException {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 5000);
      s.setSoTimeout(200);
      OutputStream out = s.getOutputStream();
      try {
        out.write(script);
        out.flush();
      } catch (IOException e) {
        return; // server already hung up: fine
      }
      if (drainReplies) {
        s.shutdownOutput(); // half-close: the server sees EOF after the script
        s.setSoTimeout(2000);
        InputStream in = s.getInputStream();
        byte[] buf = new byte[65536];
        try {
          while (in.read(buf) >= 0) {
            // discard
          }
        } catch (IOException e) {
          // timeout: the server waits for more input, we hang up
        }
      }
    }
  }

  static byte[] sequence(Random r) throws IOException {
    ByteArrayOutputStream bos = new ByteArrayOutputStream();
    DataOutputStream o = new DataOutputStream(bos);
    int mode = r.nextInt(10);
    if (mode == 0) { // pure garbage
      byte[] g = new byte[r.nextInt(200)];
      r.nextBytes(g);
      o.write(g);
      return bos.toByteArray();
    }
    o.writeInt(r.nextInt(8) == 0 ? r.nextInt() : (FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES));
    int options = r.nextInt(4);
    for (int i = 0; i < options; i++) {
      randomOption(r, o);
    }
    if (mode == 1) {
      return truncate(r, bos.toByteArray());
    }
    // enter transmission
    if (r.nextBoolean()) {
      o.writeLong(IHAVEOPT);
      o.writeInt(OPT_STRUCTURED_REPLY);
      o.writeInt(0);
    }
    if (r.nextInt(3) == 0) {
      byte[] n = "fz".getBytes(StandardCharsets.UTF_8);
      o.writeLong(IHAVEOPT);
      o.writeInt(OPT_EXPORT_NAME);
      o.writeInt(n.length);
      o.write(n);
    } else {
      byte[] req = RawNbdClient.infoRequest(r.nextInt(10) == 0 ? "other" : "fz", INFO_BLOCK_SIZE);
      o.writeLong(IHAVEOPT);
      o.writeInt(OPT_GO);
      o.writeInt(req.length);
      o.write(req);
    }
    int requests = 1 + r.nextInt(12);
    for (int i = 0; i < requests; i++) {
      randomRequest(r, o);
    }
    if (r.nextInt(3) == 0) {
      o.writeInt(REQUEST_MAGIC);
      o.writeShort(0);
      o.writeShort(CMD_DISC);
      o.writeLong(0);
      o.writeLong(0);
      o.writeInt(0);
    }
    return mode == 2 ? truncate(r, bos.toByteArray()) : bos.toByteArray();
  }

  private static byte[] truncate(Random r, byte[] b) {
    return java.util.Arrays.copyOf(b, b.length == 0 ? 0 : r.nextInt(b.length));
  }

  private static void randomOption(Random r, DataOutputStream o) throws IOException {
    o.writeLong(r.nextInt(10) == 0 ? r.nextLong() : IHAVEOPT);
    int opt = r.nextInt(5) == 0 ? r.nextInt() : r.nextInt(12);
    if (opt == OPT_EXPORT_NAME || opt == OPT_GO || opt == OPT_ABORT) {
      opt = OPT_INFO; // keep the handshake going; EXPORT_NAME/GO are sent at the end
    }
    o.writeInt(opt);
    int choice = r.nextInt(6);
    byte[] data;
    if (choice == 0) {
      data = RawNbdClient.infoRequest(r.nextBoolean() ? "fz" : "x" + r.nextInt(), INFO_BLOCK_SIZE);
    } else {
      data = new byte[r.nextInt(40)];
      r.nextBytes(data);
    }
    int len = choice == 1 ? r.nextInt() : data.length;
    o.writeInt(len);
    o.write(data);
  }

  private static void randomRequest(Random r, DataOutputStream o) throws IOException {
    int magic = r.nextInt(20) == 0 ? r.nextInt() : REQUEST_MAGIC;
    int flags = r.nextInt(6) == 0 ? r.nextInt(1 << 16) : (r.nextBoolean() ? CMD_FLAG_FUA : 0);
    int type = r.nextInt(8) == 0 ? r.nextInt(1 << 16) : r.nextInt(8);
    long offset;
    switch (r.nextInt(5)) {
      case 0: offset = r.nextLong(); break;
      case 1: offset = SIZE - r.nextInt(8192); break;
      default: offset = (long) r.nextInt((int) SIZE);
    }
    long length;
    switch (r.nextInt(6)) {
      case 0: length = r.nextInt() & 0xffffffffL; break;
      case 1: length = 0; break;
      default: length = 1 + r.nextInt(3 * BS);
    }
    boolean modifies = type == CMD_WRITE || type == CMD_TRIM || type == CMD_WRITE_ZEROES;
    if (modifies && offset >= 0 && offset < HALF) {
      offset += HALF; // confine legitimate modifications to the upper half
    }
    o.writeInt(magic);
    o.writeShort(flags);
    o.writeShort(type);
    o.writeLong(r.nextLong());
    o.writeLong(offset);
    o.writeInt((int) length);
    if (type == CMD_WRITE && magic == REQUEST_MAGIC) {
      long send = Math.min(length, r.nextInt(8) == 0 ? r.nextInt(1000) : length);
      send = Math.min(send, 3 * BS); // huge lengths: payload is cut short (client vanishes)
      byte[] p = new byte[(int) send];
      r.nextBytes(p);
      o.write(p);
    }
  }
}
