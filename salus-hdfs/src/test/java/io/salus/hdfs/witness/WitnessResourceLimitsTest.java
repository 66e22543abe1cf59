package io.salus.hdfs.witness;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.DataOutputStream;
import java.net.Socket;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.NodeKeys;
import io.salus.core.crypto.SignatureScheme;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Hostile senders against a real witness over loopback: idle connections, forged offers for many
 * regions, tentatives that never complete. None of them may exhaust the witness.
 */
class WitnessResourceLimitsTest {
  private final Certs certs = new Certs(SignatureScheme.WEAK_CRC32C);

  @TempDir
  Path dir;

  @Test
  void idleConnectionsAtTheLimitDoNotLockReplicasOut() throws Exception {
    try (WitnessNode node = WitnessDaemon.start(WitnessNode.Settings.of(dir, 0)
        .withTrust(certs.trust()).withLimits(4, 8).withIdleTimeout(300))) {
      List<Socket> idle = new ArrayList<>();
      try {
        for (int i = 0; i < 4; i++) { // every slot taken by a client that never sends anything
          idle.add(new Socket(node.address().getAddress(), node.address().getPort()));
        }
        Socket slow = idle.get(3); // one stuck in the middle of a frame (slow loris)
        DataOutputStream out = new DataOutputStream(slow.getOutputStream());
        out.writeInt(100);
        out.writeByte(1);
        out.flush();
        // A replica keeps retrying; it must get in once the idle ones are timed out. The deadline
        // only bounds the test on a hung witness; it is not a performance assertion.
        long deadline = System.nanoTime() + 60_000_000_000L;
        RegionId r = new RegionId("vol", 0);
        while (true) {
          try (WitnessClient c = WitnessClient.connect(node.address())) {
            assertEquals(WitnessClient.OfferResult.STORED,
                c.offer(certs.logEntry(Certs.entry(r, 0, 0))));
            break;
          } catch (WitnessClient.WitnessException busy) {
            assertEquals(WitnessProtocol.ST_BUSY, busy.status(), busy.getMessage());
            assertTrue(System.nanoTime() < deadline, "idle connections locked the witness out");
            Thread.sleep(100);
          }
        }
        assertTrue(node.service() != null);
      } finally {
        for (Socket s : idle) {
          s.close();
        }
      }
    }
  }

  /**
   * review: a client that sends requests but never reads the replies. Once the socket buffers
   * are full the witness thread blocks in write, where the read timeout never fires, and the
   * connection holds its slot forever; enough of them lock every replica out.
   */
  @Test
  void clientThatStopsReadingDoesNotHoldASlotForever() throws Exception {
    try (WitnessNode node = WitnessDaemon.start(WitnessNode.Settings.of(dir, 0)
        .withTrust(certs.trust()).withLimits(1, 8).withIdleTimeout(300))) {
      Socket hog = new Socket();
      hog.setReceiveBufferSize(4096);
      hog.connect(node.address());
      Thread flood = new Thread(() -> {
        try {
          DataOutputStream out = new DataOutputStream(
              new java.io.BufferedOutputStream(hog.getOutputStream(), 65536));
          for (long id = 0; ; id++) { // IDENTITY requests; the replies are never read
            WitnessProtocol.write(out, WitnessProtocol.OP_IDENTITY, id, new byte[0]);
          }
        } catch (java.io.IOException closed) {
          // the witness (or the test) closed the connection
        }
      }, "hog");
      flood.setDaemon(true);
      flood.start();
      try {
        Thread.sleep(1000); // the witness is now blocked writing replies to the hog
        long deadline = System.nanoTime() + 20_000_000_000L; // bounds a hung witness only
        RegionId r = new RegionId("vol", 0);
        while (true) {
          try (WitnessClient c = WitnessClient.connect(node.address())) {
            assertEquals(WitnessClient.OfferResult.STORED,
                c.offer(certs.logEntry(Certs.entry(r, 0, 0))));
            break;
          } catch (WitnessClient.WitnessException busy) {
            assertEquals(WitnessProtocol.ST_BUSY, busy.status(), busy.getMessage());
            assertTrue(System.nanoTime() < deadline,
                "a client that stopped reading holds the witness's only slot forever");
            Thread.sleep(100);
          }
        }
      } finally {
        hog.close();
        flood.join(10_000);
      }
    }
  }

  @Test
  void forgedOffersAndQueriesCreateNoPerRegionState() throws Exception {
    NodeKeys forger = NodeKeys.deterministic(SignatureScheme.ED25519, NodeId.of("rs0"), 7);
    try (WitnessNode node = WitnessDaemon.start(WitnessNode.Settings.of(dir, 0)
        .withTrust(new Certs(SignatureScheme.ED25519).trust()))) {
      WitnessService svc = node.service();
      for (int i = 0; i < 300; i++) {
        Certificate forged = Certificate.sign(CertType.TENTATIVE_LOG_ENTRY,
            Certs.entry(new RegionId("junk" + i, i), 0, 0), forger.signer());
        assertEquals(WitnessProtocol.ST_REJECTED, svc.offer(forged.encode()).status());
        assertEquals(CertType.NO_NEXT_ENTRY, svc.query(new RegionId("q" + i, 0), 0, 0).type());
      }
      assertEquals(0, svc.regionLogCount(), "forged offers or queries created region logs");
    }
  }

  /**
   * Review rvw22: under an {@code endpoint-volume *} line (what {@code salus up} writes: every volume's replicas, keys
   * derived from the servers' keyring), membership of any (volume, region) a sender names is derived on the spot, and
   * it used to register that region's three replica keys in the witness's key directory before any signature was
   * checked: every forged offer (or truncate) naming a new volume or region left three keys behind for ever, so an
   * unauthenticated sender grew the witness's heap without bound. Forged requests must leave nothing behind, while
   * genuine replicas of any volume still verify.
   */
  @Test
  void forgedOffersUnderAnEndpointStarLineKeepNoKeys() throws Exception {
    io.salus.core.crypto.KeyringFile servers = io.salus.core.crypto.KeyringFile.generate("*",
        new java.security.SecureRandom()).servers();
    WitnessTrust trust = new WitnessTrust(SignatureScheme.HMAC_SHA256)
        .useEndpointKeyring("*", servers, SignatureScheme.HMAC_SHA256);
    NodeKeys forger = NodeKeys.deterministic(SignatureScheme.HMAC_SHA256, NodeId.of("junk0/0/r0"), 7);
    try (WitnessNode node = WitnessDaemon.start(WitnessNode.Settings.of(dir, 0).withTrust(trust));
         WitnessClient c = WitnessClient.connect(node.address())) {
      WitnessService svc = node.service();
      for (int i = 0; i < 300; i++) {
        Certificate forged = Certificate.sign(CertType.TENTATIVE_LOG_ENTRY,
            Certs.entry(new RegionId("junk" + i, i), 0, 0), forger.signer());
        WitnessClient.WitnessException rejected = org.junit.jupiter.api.Assertions.assertThrows(
            WitnessClient.WitnessException.class, () -> c.offer(forged));
        assertEquals(WitnessProtocol.ST_REJECTED, rejected.status(), rejected.getMessage());
        assertEquals(WitnessProtocol.ST_REJECTED, svc.offer(forged.encode()).status());
      }
      assertEquals(0, svc.regionLogCount(), "forged offers created region logs");
      for (int i = 0; i < 300; i++) {
        assertTrue(!trust.keys().knows(NodeId.of("junk" + i + "/" + i + "/r1")),
            "a forged offer for volume junk" + i + " left its replicas' keys in the witness's key directory");
      }
      // genuine replicas of a volume named only by the `*` line still get their entries stored
      RegionId real = new RegionId("vol9", 3);
      List<Certificate> t = new ArrayList<>();
      for (int k = 0; k < 3; k++) {
        NodeId id = NodeId.of("vol9/3/r" + k);
        t.add(Certificate.sign(CertType.TENTATIVE_LOG_ENTRY, Certs.entry(real, 0, 0),
            servers.serverKeys(SignatureScheme.HMAC_SHA256, id).signer()));
      }
      assertEquals(WitnessClient.OfferResult.STORED, c.offer(Certificate.combine(t)));
    }
  }

  @Test
  void pendingTentativesArePrunedByCheckpointsAndBounded() throws Exception {
    RegionId r = new RegionId("vol", 1);
    try (WitnessNode node = WitnessDaemon.start(WitnessNode.Settings.of(dir, 0)
        .withTrust(certs.trust()))) {
      WitnessService svc = node.service();
      for (long i = 0; i < 100; i++) { // only replica 0 ever offers: the slots stay incomplete
        assertEquals(WitnessProtocol.ST_PENDING,
            svc.offer(certs.tentative(0, Certs.entry(r, 0, i)).encode()).status());
      }
      assertEquals(100, svc.pendingSlots());
      assertEquals(WitnessProtocol.ST_TRUNCATED,
          svc.truncate(certs.checkpoint(r, 0, 49).encode()).status());
      assertEquals(50, svc.pendingSlots(), "a checkpoint must drop the pending slots it covers");
      int extra = WitnessService.MAX_PENDING_SLOTS_PER_REGION + 20;
      for (long i = 100; i < 100 + extra; i++) {
        svc.offer(certs.tentative(1, Certs.entry(r, 0, i)).encode());
      }
      assertEquals(WitnessService.MAX_PENDING_SLOTS_PER_REGION, svc.pendingSlots());
      // The newest slots are kept and still complete.
      long last = 100 + extra - 1;
      svc.offer(certs.tentative(0, Certs.entry(r, 0, last)).encode());
      assertEquals(WitnessProtocol.ST_STORED,
          svc.offer(certs.tentative(2, Certs.entry(r, 0, last)).encode()).status());
    }
  }
}
