package io.salus.it.salus;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.salus.SalusVolume;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.SignatureScheme;
import io.salus.core.hbase.VolumeGeometry;
import io.salus.core.hbase.endpoint.CallAuth;
import io.salus.core.hbase.endpoint.EndpointKeyring;
import io.salus.core.hbase.endpoint.ReplicaLink;
import io.salus.core.hbase.endpoint.VolumeAddressing;
import io.salus.core.protocol.message.Message;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.hbase.client.AsyncConnection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Review finding (rv13): the replica endpoint's {@code poll} RPC (and the {@code replyTo} of {@code deliver}) hands
 * the replies queued for the volume's client to <b>any</b> caller that names the client, and removes them. The
 * client's name is public (it is derived from the volume name), and the call needs no Salus key: any process that
 * can reach HBase RPC can drain the outboxes. The real client then never collects the three tentative outcomes of
 * a region, retransmits, and after {@code VolumeClient.DEFAULT_RETRIES_BEFORE_RECOVERY} retransmissions without
 * progress asks for recovery: {@link SalusVolume} then refuses every write until a remount that is not built, so
 * one unauthenticated poller kills the volume.
 *
 * <p>Real components only: the mini cluster of {@link SalusMiniCluster} (HDFS-backed replica storage), a real
 * {@link SalusVolume}, and the thief is the project's own {@link ReplicaLink} with {@code replyTo} set to the
 * client's name over its own HBase connection.
 */
@OnSharedSalusCluster
class SalusReplyTheftTest {
  static final int BLOCK = 4096;
  static final long PER_REGION = 16;
  static SalusMiniCluster cluster;

  @BeforeAll
  static void start() throws Exception {
    cluster = SalusMiniCluster.shared(); // started by the first class of this JVM tagged with it
  }

  @Test
  void anHbaseClientWithoutKeysCannotStealTheClientsRepliesAndStallItsWrites() throws Exception {
    VolumeGeometry g = new VolumeGeometry("theft", 2 * PER_REGION * BLOCK, BLOCK, PER_REGION);
    cluster.createVolume(g);
    VolumeAddressing addressing = new VolumeAddressing(g);
    AtomicLong stolen = new AtomicLong();
    AtomicBoolean stop = new AtomicBoolean();
    AsyncConnection thiefConn = ConnectionFactory.createAsyncConnection(cluster.util.getConfiguration())
        .get(60, TimeUnit.SECONDS);
    // the thief: no keys, only the (public) client name derived from the volume name
    ReplicaLink thief = new ReplicaLink(CompletableFuture.completedFuture(thiefConn), addressing, "thief",
        addressing.client().name(), e -> stolen.incrementAndGet());
    try (SalusVolume v = SalusVolume.open(cluster.connection(), "theft")) {
      for (int r = 0; r < g.numRegions(); r++) {
        for (int k = 0; k < 3; k++) {
          pollForever(thief, addressing.address(r, k), stop);
        }
      }
      byte[] d = new byte[4 * BLOCK];
      new Random(13).nextBytes(d);
      Throwable writeError = null;
      try {
        // PER_REGION - 2 .. PER_REGION + 1: a batch across both regions
        v.write(PER_REGION - 2, d, true).get(SalusMiniCluster.DEADLINE_MS, TimeUnit.MILLISECONDS);
      } catch (ExecutionException e) {
        writeError = e.getCause();
      }
      stop.set(true);
      assertEquals(0, stolen.get(), "a caller without the client's key collected " + stolen.get()
          + " of the client's replies through poll (write outcome: " + (writeError == null ? "committed"
          : writeError.toString()) + ")");
      assertNull(writeError, "the write failed while another HBase client polled as the volume's client");
      assertArrayEquals(d, v.read(PER_REGION - 2, 4).get(SalusMiniCluster.DEADLINE_MS, TimeUnit.MILLISECONDS));
    } finally {
      stop.set(true);
      thief.close();
      thiefConn.close();
    }
  }

  /**
   * Task key22 (production keyring): a process that holds the servers' keyring (a region server's files: the servers'
   * secret and the client's public key) makes itself a client keyring with its own Ed25519 key and mounts the
   * volume with it. The replicas check the client's signatures with the public key of the servers' file, so nothing
   * it sends is acknowledged or stored; the real client's write is then still the volume's content.
   */
  @Test
  void aClientKeyringWithAnotherClientKeyWritesNothing() throws Exception {
    VolumeGeometry g = new VolumeGeometry("impostor", 2 * PER_REGION * BLOCK, BLOCK, PER_REGION);
    cluster.createVolume(g);
    byte[] real = new byte[BLOCK];
    new Random(21).nextBytes(real);
    try (SalusVolume v = SalusVolume.open(cluster.connection(), "impostor")) {
      v.write(0, real, true).get(SalusMiniCluster.DEADLINE_MS, TimeUnit.MILLISECONDS);
    }
    // the impostor's client file: the real servers' secret, its own client key
    org.apache.hadoop.conf.Configuration conf = cluster.util.getConfiguration();
    java.nio.file.Path serverFile = java.nio.file.Path.of(conf.get(EndpointKeyring.KEYRING_FILE_KEY));
    String secretLine = java.nio.file.Files.readAllLines(serverFile).stream()
        .filter(l -> l.startsWith("server-secret ")).findFirst().orElseThrow();
    java.nio.file.Path own = java.nio.file.Files.createTempDirectory("impostor").resolve("x.keyring");
    io.salus.core.crypto.KeyringFile.generate("*", new java.security.SecureRandom()).client().write(own);
    String ownClient = java.nio.file.Files.readAllLines(own).stream()
        .filter(l -> l.startsWith("client-secret ")).findFirst().orElseThrow();
    java.nio.file.Path forged = own.resolveSibling("forged.keyring");
    java.nio.file.Files.createFile(forged, java.nio.file.attribute.PosixFilePermissions.asFileAttribute(
        java.nio.file.attribute.PosixFilePermissions.fromString("rw-------")));
    java.nio.file.Files.writeString(forged, secretLine + "\n" + ownClient + "\n");
    org.apache.hadoop.conf.Configuration ic = new org.apache.hadoop.conf.Configuration(conf);
    ic.set(EndpointKeyring.CLIENT_KEYRING_FILE_KEY, forged.toString());
    byte[] fake = new byte[BLOCK];
    java.util.Arrays.fill(fake, (byte) 0x66);
    org.apache.hadoop.hbase.client.Connection iconn = ConnectionFactory.createConnection(ic);
    CompletableFuture<Void> attempt = CompletableFuture.runAsync(() -> {
      try {
        SalusVolume iv = SalusVolume.open(iconn, "impostor");
        iv.write(0, fake, true).get(SalusMiniCluster.DEADLINE_MS, TimeUnit.MILLISECONDS);
      } catch (Exception e) {
        throw new java.util.concurrent.CompletionException(e);
      }
    });
    Throwable outcome = null;
    try {
      attempt.get(30, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      outcome = e.getCause();
    } catch (java.util.concurrent.TimeoutException e) {
      outcome = e; // still waiting for answers the replicas never give
    } finally {
      iconn.close();
    }
    assertNotNull(outcome, "the impostor's mount and write were acknowledged");
    for (int k = 0; k < 3; k++) {
      byte[] b = cluster.endpoint(g, 0, k).host().inspect((io.salus.core.protocol.replica.RegionReplica rep) ->
          rep.block(0)).get(60, TimeUnit.SECONDS);
      assertArrayEquals(real, b, "replica " + k + " holds the real client's block (impostor: " + outcome + ")");
    }
  }

  /**
   * Review finding (rv13): the endpoint takes the sender of an envelope from the envelope itself, so any HBase
   * client can send a GET "from" the volume's client. RegionReplica admits only the client's GETs because "anyone
   * else's GET would wait here for ever" — but a forged one with prevNum = Long.MAX_VALUE does exactly that: it is
   * kept in the replica's pending GETs for ever, each one makes every later GET arrival and every apply scan the
   * whole list, and nothing bounds it (memory and the replica's single event loop). A forged GET that can be served
   * at once (prevNum 0), a forged DecisionRequest or MountQuery would make the replica queue answers in the client's
   * outbox (bounded: they push the client's real replies out). With caller authentication ({@code CallAuth}) none
   * of them reaches the replica: not kept, not served, nothing queued for the client; and a caller holding a
   * replica's key (a region server) cannot speak for the client either.
   */
  @Test
  void forgedGetsFromAKeylessCallerAreNotKeptByTheReplica() throws Exception {
    VolumeGeometry g = new VolumeGeometry("forge", 2 * PER_REGION * BLOCK, BLOCK, PER_REGION);
    cluster.createVolume(g);
    VolumeAddressing addressing = new VolumeAddressing(g);
    int n = 2000;
    AsyncConnection forgerConn = ConnectionFactory.createAsyncConnection(cluster.util.getConfiguration())
        .get(60, TimeUnit.SECONDS);
    ReplicaLink forger = new ReplicaLink(CompletableFuture.completedFuture(forgerConn), addressing, "forger", null,
        null);
    // a region server's key (replica forge/0/r1): it may speak for the nodes its region hosts, never for the client
    EndpointKeyring keys = EndpointKeyring.fromConfiguration(cluster.util.getConfiguration(), addressing);
    NodeId peer = addressing.replica(0, 1);
    ReplicaLink peerLink = new ReplicaLink(CompletableFuture.completedFuture(forgerConn), addressing, "peer", null,
        null, new CallAuth.Signing(g.volume(), keys.signer(peer), 0));
    try (SalusVolume v = SalusVolume.open(cluster.connection(), "forge")) {
      byte[] d = new byte[BLOCK];
      new Random(14).nextBytes(d);
      v.write(0, d, true).get(SalusMiniCluster.DEADLINE_MS, TimeUnit.MILLISECONDS);
      var host = cluster.endpoint(g, 0, 0).host();
      Map<String, Long> before = host.counters();
      NodeId target = addressing.replica(0, 0);
      for (int i = 0; i < n; i++) {
        // no key, no signature: only the public client name in the envelope's "from"
        forger.send(addressing.address(0, 0), ReplicaLink.envelope(addressing.client(), target,
            new Message.GetRequest(1_000_000L + i, 0, Long.MAX_VALUE)));
        // served at once if believed: a GetReply into the client's outbox
        forger.send(addressing.address(0, 0), ReplicaLink.envelope(addressing.client(), target,
            new Message.GetRequest(2_000_000L + i, 0, 0)));
        // answered to the client if believed: a MountState (every leaf hash) / a decision into its outbox
        forger.send(addressing.address(0, 0), ReplicaLink.envelope(addressing.client(), target,
            new Message.MountQuery(3_000_000L + i, 0, null)));
        forger.send(addressing.address(0, 0), ReplicaLink.envelope(addressing.client(), target,
            new Message.DecisionRequest(0, 5_000_000L + i)));
        while (forger.queued() > ReplicaLink.MAX_QUEUED / 2) {
          Thread.sleep(5); // the link drops beyond MAX_QUEUED: every forged envelope must reach the endpoint
        }
      }
      for (int i = 0; i < 100; i++) {
        peerLink.send(addressing.address(0, 0), ReplicaLink.envelope(addressing.client(), target,
            new Message.GetRequest(4_000_000L + i, 0, Long.MAX_VALUE)));
      }
      long end = System.currentTimeMillis() + SalusMiniCluster.DEADLINE_MS;
      while ((arrived(host.counters()) < arrived(before) + 4 * n
          || foreign(host.counters()) < foreign(before) + 100) && System.currentTimeMillis() < end) {
        Thread.sleep(50);
      }
      Map<String, Long> after = host.counters();
      assertTrue(arrived(after) >= arrived(before) + 4 * n, "the forged envelopes reached the endpoint: " + after
          + " " + forger.counters());
      assertEquals(0, forger.counters().get("dropped"), "the forger's link dropped envelopes: " + forger.counters());
      assertTrue(foreign(after) >= foreign(before) + 100, "the replica-signed envelopes in the client's name reached"
          + " the endpoint: " + after + " " + peerLink.counters());
      int pending = host.inspect(r -> r.retainedSizes().get("pendingGets")).get(60, TimeUnit.SECONDS);
      assertEquals(0, pending, "replica " + target + " keeps " + pending + " GETs that a caller without the"
          + " client's key sent in the client's name, each waiting for seq " + Long.MAX_VALUE + " for ever");
      // let the event loop drain whatever it was given, then nothing may have been queued for the client
      host.inspect(r -> 0).get(60, TimeUnit.SECONDS);
      long queued = host.counters().get("toClient") - before.get("toClient");
      assertTrue(queued < n, "replica " + target + " queued " + queued + " messages for the client in answer to "
          + 3 * n + " forged GETs / MountQueries / DecisionRequests: " + host.counters());
      assertArrayEquals(d, v.read(0, 1).get(SalusMiniCluster.DEADLINE_MS, TimeUnit.MILLISECONDS));
    } finally {
      forger.close();
      peerLink.close();
      forgerConn.close();
    }
  }

  /** Envelopes the endpoint enqueued or dropped (an unauthenticated call's). */
  private static long arrived(Map<String, Long> c) {
    return c.get("received") + c.getOrDefault("authDroppedEnvelopes", 0L);
  }

  private static long foreign(Map<String, Long> c) {
    return c.getOrDefault("authForeignSenderEnvelopes", 0L);
  }

  private static void pollForever(ReplicaLink thief, VolumeAddressing.Address a, AtomicBoolean stop) {
    if (stop.get()) {
      return;
    }
    thief.poll(a).whenComplete((n, err) -> pollForever(thief, a, stop));
  }
}
