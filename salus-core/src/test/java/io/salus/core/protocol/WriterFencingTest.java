package io.salus.core.protocol;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.cert.CertificateFormatException;
import io.salus.core.cert.RegionId;
import io.salus.core.cert.Statement;
import io.salus.core.cert.Wire;
import io.salus.core.crypto.KeyDirectory;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.NodeKeys;
import io.salus.core.crypto.SignatureScheme;
import io.salus.core.crypto.Signer;
import io.salus.core.merkle.HashAlgorithm;
import io.salus.core.merkle.RegionLayout;
import io.salus.core.protocol.client.BlockWrite;
import io.salus.core.protocol.client.ClientListener;
import io.salus.core.protocol.client.VolumeClient;
import io.salus.core.protocol.message.Message;
import io.salus.core.protocol.message.MessageCodec;
import io.salus.core.protocol.message.SubBatch;
import io.salus.core.protocol.recovery.InMemoryCoordination;
import io.salus.core.protocol.recovery.RegionLogRecovery;
import io.salus.core.protocol.replica.InMemoryReplicaDisk;
import io.salus.core.protocol.replica.RegionReplica;
import io.salus.core.protocol.replica.RegionSnapshot;
import io.salus.core.protocol.replica.ReplicaHooks;
import io.salus.core.protocol.witness.InMemoryCertificateStore;
import io.salus.core.protocol.witness.WitnessLog;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;

/**
 * Fencing enforced by storage (issue 13 item 6): every sub-batch and BatchInfo carries the writer's lease epoch, a
 * new writer's first action raises the epoch at every replica (WRITER_FENCE, recorded on the replica's disk before
 * it is confirmed), and replicas refuse any other epoch. Two clients share the client id and keys, as two block
 * drivers of one volume do; replies reach both (as the shared reply outbox on the region servers does). The network
 * is an in-memory FIFO the test can hold messages in, to deliver an old writer's messages late.
 */
class WriterFencingTest {
    record Envelope(NodeId from, NodeId to, Message m) {
    }

    final ProtocolConfig cfg = ProtocolConfig.of("v", 16, HashAlgorithm.SHA256, RegionLayout.ofRegionSize(16, 8))
            .withCheckpointEvery(PipelinedCommitTest.CHECKPOINT_EVERY); // these tests were written for 4
    final KeyDirectory dir = new KeyDirectory(SignatureScheme.ED25519);
    final Map<NodeId, Signer> signers = new HashMap<>();
    final Deque<Envelope> net = new ArrayDeque<>();
    final List<Envelope> held = new ArrayList<>();
    Predicate<Envelope> hold = e -> false;
    final Map<NodeId, RegionReplica> replicas = new HashMap<>();
    final Map<NodeId, RrsConfig> configOf = new HashMap<>();
    final Map<NodeId, WitnessLog> stores = new HashMap<>();
    final Map<NodeId, InMemoryReplicaDisk> disks = new HashMap<>();
    final Map<Integer, RrsConfig> configs = new HashMap<>();
    final InMemoryCoordination coord = new InMemoryCoordination();
    final NodeId clientId = id("client");
    final Membership membership = new Membership() {
        public RrsConfig current(int region) {
            return configs.get(region);
        }

        public RrsConfig config(RegionId region, long generation) {
            return configs.get(region.index());
        }
    };
    final List<Writer> writers = new ArrayList<>();

    /** One block driver: its client and what its listener heard. */
    final class Writer {
        final VolumeClient client;
        final List<Long> acked = new ArrayList<>();
        final List<Long> failed = new ArrayList<>();
        final List<String> fenced = new ArrayList<>();
        final Map<Long, byte[]> got = new HashMap<>();

        Writer(long epoch) {
            client = new VolumeClient(cfg, clientId, signers.get(clientId), dir, membership,
                    (to, m) -> net.add(new Envelope(clientId, to, m)), new ClientListener() {
                        public void putSucceeded(long b, long f, long l, List<Certificate> certs) {
                            acked.add(b);
                        }

                        public void putFailed(long b) {
                            failed.add(b);
                        }

                        public void recoveryNeeded(String reason) {
                        }

                        public void getSucceeded(long id, long block, byte[] data) {
                            got.put(block, data);
                        }

                        @Override
                        public void fenced(String reason) {
                            fenced.add(reason);
                        }
                    }, 4, 1000, VolumeClient.DEFAULT_RETRIES_BEFORE_RECOVERY, epoch);
            writers.add(this);
        }
    }

    NodeId id(String n) {
        NodeKeys k = NodeKeys.deterministic(SignatureScheme.ED25519, NodeId.of(n), 5);
        dir.register(k);
        signers.put(k.id(), k.signer());
        return k.id();
    }

    WriterFencingTest() {
        for (int r = 0; r < 2; r++) {
            List<NodeId> reps = List.of(id("rs" + r + "a"), id("rs" + r + "b"), id("rs" + r + "c"));
            List<NodeId> dns = List.of(id("dn" + r + "a"), id("dn" + r + "b"), id("dn" + r + "c"));
            List<NodeId> ws = List.of(id("w" + r + "a"), id("w" + r + "b"));
            configs.put(r, new RrsConfig(new RegionId("v", r), 0, reps, dns, ws));
        }
        for (RrsConfig c : configs.values()) {
            for (NodeId rep : c.replicas()) {
                disks.put(rep, new InMemoryReplicaDisk());
                configOf.put(rep, c);
                start(rep);
            }
            for (NodeId h : c.metadataHolders()) {
                stores.put(h, new WitnessLog(signers.get(h), dir, new InMemoryCertificateStore(),
                        (r, g) -> configs.get(r.index()).replicaSet()));
            }
        }
    }

    /** Starts (or restarts: memory lost, disk kept) a replica. */
    RegionReplica start(NodeId rep) {
        RegionReplica r = new RegionReplica(cfg, configOf.get(rep), rep, clientId, signers.get(rep), dir, membership,
                (to, m) -> net.add(new Envelope(rep, to, m)), disks.get(rep), coord, ReplicaHooks.NONE,
                RegionSnapshot.empty(0, RegionLogRecovery.emptyVolumeRoot(cfg)));
        replicas.put(rep, r);
        return r;
    }

    void drain() {
        Envelope e;
        while ((e = net.poll()) != null) {
            if (hold.test(e)) {
                held.add(e);
                continue;
            }
            deliver(e);
        }
    }

    void releaseHeld() {
        hold = e -> false;
        net.addAll(held);
        held.clear();
        drain();
    }

    void deliver(Envelope e) {
        if (e.to().equals(clientId)) {
            writers.forEach(w -> w.client.receive(e.from(), e.m())); // the shared reply outbox
        } else if (replicas.containsKey(e.to())) {
            replicas.get(e.to()).receive(e.from(), e.m());
        } else if (e.m() instanceof Message.LogCertMsg l && stores.get(e.to()).offer(l.tentative())
                == WitnessLog.Offer.STORED) {
            Statement.LogEntry st = l.tentative().statement(Statement.LogEntry.class);
            Certificate c = stores.get(e.to()).query(st.region(), st.generation(), st.index());
            var digest = c.statement(Statement.LogEntry.class).digest();
            byte[] sig = signers.get(e.to()).sign(Message.StoreAck.signedBytes(st.region().index(), st.generation(),
                    st.index(), digest));
            for (NodeId r : configs.get(st.region().index()).replicas()) {
                net.add(new Envelope(e.to(), r, new Message.StoreAck(st.region().index(), st.generation(),
                        st.index(), digest, sig)));
            }
        }
    }

    static byte[] data(int v) {
        byte[] d = new byte[16];
        d[0] = (byte) v;
        d[15] = (byte) ~v;
        return d;
    }

    Writer fencedWriter(long epoch) {
        Writer w = new Writer(epoch);
        w.client.fence();
        drain();
        assertEquals(Set.of(), w.client.fenceOutstanding(), "every replica confirmed epoch " + epoch);
        return w;
    }

    /** Log sizes and applied seqs of every replica: nothing of a refused sub-batch may show in them. */
    Map<NodeId, List<Long>> footprint() {
        Map<NodeId, List<Long>> m = new HashMap<>();
        replicas.forEach((id, r) -> m.put(id, List.of(disks.get(id).lastIndex(0), r.appliedSeq(), r.committedIndex())));
        return m;
    }

    @Test
    void lateSubBatchesOfAFencedWriterAreRefusedAndNothingOfThemIsApplied() {
        Writer old = fencedWriter(5);
        assertTrue(old.client.submit(List.of(new BlockWrite(1, data(1)))) > 0);
        drain();
        assertEquals(List.of(1L), old.acked, "the first writer commits while it holds the lease");
        // the old writer's next batch (both regions) is delayed in the network...
        hold = e -> e.from().equals(clientId);
        long late = old.client.submit(List.of(new BlockWrite(2, data(2)), new BlockWrite(9, data(3))));
        assertTrue(late > 0);
        drain();
        hold = e -> false;
        // ...while a new writer takes the lease and fences every replica before it writes anything
        Writer fresh = fencedWriter(7);
        Map<NodeId, List<Long>> before = footprint();
        releaseHeld(); // the old writer's sub-batches and BatchInfo arrive late
        assertEquals(before, footprint(), "a replica logged or applied the fenced writer's late sub-batch");
        for (RegionReplica r : replicas.values()) {
            assertEquals(7, r.writerEpoch());
            long first = cfg.layout().firstBlock(r.config().region().index());
            for (long b : List.of(2L, 9L)) {
                if (cfg.layout().regionOf(b) == r.config().region().index()) {
                    assertUnwritten(r.block(b - first), r.id() + " applied block " + b + " of the fenced writer");
                }
            }
        }
        // the refusal reaches the old writer as an error, not a hang
        assertEquals(List.of(late), old.failed, "the late batch fails");
        assertEquals(1, old.fenced.size());
        assertTrue(old.fenced.get(0).contains("holds writer epoch 7"), old.fenced.get(0));
        IllegalStateException refused = assertThrows(IllegalStateException.class,
                () -> old.client.submit(List.of(new BlockWrite(3, data(4)))));
        assertTrue(refused.getMessage().contains("fenced"), refused.getMessage());
        assertEquals(0, old.client.outstandingBatches());
        // the new writer is not disturbed by the old one's refusals (same client id, other epoch)
        assertEquals(List.of(), fresh.fenced);
        assertTrue(fresh.client.submit(List.of(new BlockWrite(9, data(9)))) > 0); // region 1: the old writer never wrote it
        drain();
        assertEquals(1, fresh.acked.size(), "the new writer's batch commits");
        fresh.client.get(9);
        drain();
        assertArrayEquals(data(9), fresh.got.get(9L), "and reads back verified");
        // the old writer retransmits after the fence: still refused
        Map<NodeId, List<Long>> after = footprint();
        old.client.tick(10_000);
        drain();
        assertEquals(after, footprint());
    }

    @Test
    void aRestartedReplicaKeepsTheFence() {
        Writer old = fencedWriter(5);
        hold = e -> e.from().equals(clientId);
        long late = old.client.submit(List.of(new BlockWrite(9, data(3))));
        drain();
        hold = e -> false;
        fencedWriter(7);
        // every replica of region 1 restarts (memory lost, disk kept) before the late sub-batch arrives
        for (NodeId rep : configs.get(1).replicas()) {
            assertEquals(7, start(rep).writerEpoch(), rep + " reloaded its fence from its disk");
        }
        Map<NodeId, List<Long>> before = footprint();
        releaseHeld();
        assertEquals(before, footprint(), "a restarted replica accepted the fenced writer again");
        assertEquals(List.of(late), old.failed);
        for (NodeId rep : configs.get(1).replicas()) {
            assertUnwritten(replicas.get(rep).block(1), rep + " applied the fenced writer's block");
        }
    }

    @Test
    void aWriterThatFencesAfterANewerOneIsToldItIsFencedAndCannotWrite() {
        fencedWriter(7);
        Writer stale = new Writer(5);
        stale.client.fence();
        drain();
        assertEquals(1, stale.fenced.size(), "the stale writer learns it is fenced");
        assertNotNull(stale.client.needsRemount());
        assertThrows(IllegalStateException.class, () -> stale.client.submit(List.of(new BlockWrite(1, data(1)))));
        for (RegionReplica r : replicas.values()) {
            assertEquals(7, r.writerEpoch(), "a lower epoch never lowers a replica's");
        }
    }

    @Test
    void aWriterWithAnEpochWritesOnlyAfterItFencedEveryReplica() {
        Writer w = new Writer(3);
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> w.client.submit(List.of(new BlockWrite(1, data(1)))));
        assertTrue(e.getMessage().contains("fence"), e.getMessage());
        // a fence certificate signed by anyone but the client is not recorded
        Certificate forged = Certificate.sign(CertType.WRITER_EPOCH, new Statement.WriterEpoch("v", 99),
                signers.get(configs.get(0).replicas().get(1)));
        replicas.values().forEach(r -> r.receive(clientId, new Message.WriterFence(forged)));
        drain();
        replicas.values().forEach(r -> assertEquals(0, r.writerEpoch(), "a forged fence was recorded"));
    }

    @Test
    void encodingsWithoutTheEpochAreRefusedNotMisread() {
        Writer w = fencedWriter(11);
        hold = e -> true;
        w.client.submit(List.of(new BlockWrite(1, data(1))));
        drain();
        SubBatch sb = held.stream().filter(e -> e.m() instanceof Message.SubBatchMsg)
                .map(e -> ((Message.SubBatchMsg) e.m()).subBatch()).findFirst().orElseThrow();
        assertEquals(11, sb.epoch());
        assertEquals(sb, SubBatch.decode(sb.encode()));
        // the epoch is signed: changing it breaks the client signature
        SubBatch relabelled = new SubBatch(sb.volume(), sb.region(), sb.batchId(), sb.leaderRegion(), 12, sb.puts(),
                sb.clientSig());
        assertFalse(dir.verify(clientId, relabelled.signedBytes(), sb.clientSig()));
        // a version-1 log entry (no epoch field) is refused with the reason, never read as if it had one
        byte[] v2 = sb.encode();
        byte[] v1 = v1Entry(sb);
        CertificateFormatException e1 = assertThrows(CertificateFormatException.class, () -> SubBatch.decode(v1));
        assertTrue(e1.getMessage().contains("version 1") && e1.getMessage().contains("writer epoch"), e1.getMessage());
        assertEquals(2, v2[0]);
        // a codec-version-1 message is refused the same way
        byte[] msg = MessageCodec.encode(new Message.SubBatchMsg(sb));
        msg[0] = 1;
        CertificateFormatException e2 = assertThrows(CertificateFormatException.class, () -> MessageCodec.decode(msg));
        assertTrue(e2.getMessage().contains("version 1") && e2.getMessage().contains("writer epoch"), e2.getMessage());
        // the new messages round-trip
        for (Envelope e : held) {
            assertEquals(e.m().getClass(), MessageCodec.decode(MessageCodec.encode(e.m())).getClass());
        }
        Certificate fence = Certificate.sign(CertType.WRITER_EPOCH, new Statement.WriterEpoch("v", 11),
                signers.get(clientId));
        Message.WriterFence f = (Message.WriterFence) MessageCodec.decode(MessageCodec.encode(new Message.WriterFence(fence)));
        assertEquals(fence.statement(), f.writerEpoch().statement());
        byte[] sig = signers.get(clientId).sign(new byte[] {1});
        Message.WriterEpochReply r = (Message.WriterEpochReply) MessageCodec.decode(MessageCodec.encode(
                new Message.WriterEpochReply("v", 1, 4, 11, 12, sig)));
        assertEquals(List.of(1, 4L, 11L, 12L), List.of(r.region(), r.batchId(), r.clientEpoch(), r.replicaEpoch()));
    }

    static void assertUnwritten(byte[] block, String message) {
        if (block != null) {
            assertArrayEquals(new byte[16], block, message);
        }
    }

    /** The version-1 log entry of {@code sb}: the same fields without the epoch. */
    static byte[] v1Entry(SubBatch sb) {
        Wire.Out o = new Wire.Out().u8(1).str8(sb.volume()).i32(sb.region()).i64(sb.batchId()).i32(sb.leaderRegion())
                .i32(sb.puts().size());
        for (var p : sb.puts()) {
            o.i64(p.seq()).i64(p.prevNum()).i64(p.block()).hash(p.dataHash()).hash(p.volumeRoot()).blob(p.data());
        }
        return o.blob(sb.clientSig()).toByteArray();
    }
}
