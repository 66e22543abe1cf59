package io.salus.blockdriver.nbd;

import static io.salus.blockdriver.nbd.NbdProtocol.*;
import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.volume.MemoryVolume;
import java.io.IOException;
import java.net.InetAddress;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/**
 * A request still in flight when the client sends NBD_CMD_DISC (or closes its sending side)
 * is finished by the drain and must still get its reply before the server closes: libnbd's
 * nbd_aio_disconnect, for one, keeps reading replies to the commands it issued before the DISC.
 * The reply thread holds a reply back while its queue is not empty (batching) and the drain
 * queues the stop right behind the last reply, so the stop found the reply unflushed and the
 * channel was closed with it still in the send buffer: the unaligned write below was done on
 * the volume but its client saw the connection end without an answer (78 of 400 rounds on the
 * 2-core machine). The reader thread's own batched replies were dropped the same way when a
 * protocol error ended the connection: the replies to the valid requests before it never left
 * (an oversized write already flushed them; a bad magic did not).
 */
class NbdCloseSendsHeldRepliesTest {
  private static final int ROUNDS = 200;

  @Test
  void aWriteInFlightAtDiscGetsItsReply() throws Exception {
    assertEquals(0, lostReplies(true));
  }

  @Test
  void aWriteInFlightWhenTheClientHalfClosesGetsItsReply() throws Exception {
    assertEquals(0, lostReplies(false));
  }

  @Test
  void repliesToValidRequestsBeforeABadMagicAreSent() throws Exception {
    MemoryVolume vol = new MemoryVolume("vol", 256, 4096);
    try (NbdServer server = new NbdServer(InetAddress.getLoopbackAddress(), 0,
            NbdExports.of(vol)).start();
        RawNbdClient c = new RawNbdClient(server.port())) {
      c.connect("vol", true);
      byte[] data = new byte[4096];
      Arrays.fill(data, (byte) 7);
      // an aligned write (answered on the reader thread, batched: more bytes are buffered behind
      // it) and a flush, then garbage, all in one segment
      header(c, CMD_WRITE, 1, 0, data.length);
      c.out.write(data);
      header(c, CMD_FLUSH, 2, 0, 0);
      c.out.writeLong(0xdeadbeefcafef00dL);
      c.out.writeLong(0);
      c.out.writeLong(0);
      c.out.writeInt(0);
      c.out.flush();
      RawNbdClient.Reply w;
      RawNbdClient.Reply f;
      try {
        w = c.readReply(0);
        f = c.readReply(0);
      } catch (IOException e) {
        throw new AssertionError("the replies to the write and the flush before the bad magic"
            + " were not sent: " + e, e);
      }
      assertEquals(1, w.handle());
      assertEquals(0, w.error());
      assertEquals(2, f.handle());
      assertEquals(0, f.error());
      assertTrue(c.serverClosed(), "the bad magic still ends the connection");
    }
  }

  /** Rounds (of {@link #ROUNDS}) in which the reply to a write sent just before the end is lost. */
  private static int lostReplies(boolean sendDisc) throws Exception {
    MemoryVolume vol = new MemoryVolume("vol", 256, 4096);
    int lost = 0;
    try (NbdServer server = new NbdServer(InetAddress.getLoopbackAddress(), 0,
        NbdExports.of(vol)).start()) {
      for (int i = 0; i < ROUNDS; i++) {
        try (RawNbdClient c = new RawNbdClient(server.port())) {
          c.connect("vol", (i & 1) == 0); // simple and structured replies
          byte[] data = new byte[1000];
          Arrays.fill(data, (byte) (i + 1));
          // unaligned: read-modify-write on a worker, so the reply goes through the reply thread
          header(c, CMD_WRITE, 42, 100 + i, data.length);
          c.out.write(data);
          if (sendDisc) {
            header(c, CMD_DISC, 43, 0, 0);
          }
          c.out.flush(); // the write and the DISC in one segment
          if (!sendDisc) {
            c.socket.shutdownOutput();
          }
          try {
            RawNbdClient.Reply r = c.readReply(0);
            assertEquals(42, r.handle(), "reply handle");
            assertEquals(0, r.error(), "reply error");
          } catch (IOException e) {
            lost++;
          }
          byte[] got = new byte[1000];
          System.arraycopy(vol.read(0, 2).join(), 100 + i, got, 0, 1000);
          assertArrayEquals(data, got, "the write must be on the volume (round " + i + ")");
        }
      }
    }
    return lost;
  }

  private static void header(RawNbdClient c, int type, long handle, long offset, int length)
      throws IOException {
    c.out.writeInt(REQUEST_MAGIC);
    c.out.writeShort(0);
    c.out.writeShort(type);
    c.out.writeLong(handle);
    c.out.writeLong(offset);
    c.out.writeInt(length);
  }
}
