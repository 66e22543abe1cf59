package io.salus.core.protocol;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import io.salus.core.cert.Statement;
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
import java.util.TreeMap;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;

/**
 * Bytes per message type on the replica transport (task net18): what one 64 KiB write (sixteen 4 KiB blocks, one
 * region, Ed25519) costs between replicas and metadata holders while its batch waits for its decision, as a
 * pipelined batch waits for the batches before it. Counts, not timings: an in-memory FIFO network, replicas ticked
 * by the test (one tick = {@code ReplicaHost.TICK_MILLIS}, 50 ms on a region server).
 */
class ReplicaTransportBytesTest {
    record Envelope(NodeId from, NodeId to, Message m) {
    }

    static final int BLOCK = 4096;
    static final int BLOCKS = 16; // 64 KiB
    /** 5 s of a region server's ticks. */
    static final int WAIT_TICKS = 100;

    final ProtocolConfig cfg = ProtocolConfig.of("v", BLOCK, HashAlgorithm.SHA256, RegionLayout.ofRegionSize(32, 16));
    final KeyDirectory dir = new KeyDirectory(SignatureScheme.ED25519);
    final Map<NodeId, Signer> signers = new HashMap<>();
    final Deque<Envelope> net = new ArrayDeque<>();
    final List<Envelope> held = new ArrayList<>();
    Predicate<Envelope> hold = e -> false;
    final Map<NodeId, RegionReplica> replicas = new HashMap<>();
    final Map<NodeId, WitnessLog> stores = new HashMap<>();
    final List<Envelope> sent = new ArrayList<>();
    final Map<Integer, RrsConfig> configs = new HashMap<>();
    final List<Long> acked = new ArrayList<>();
    final NodeId clientId = id("client");
    final Membership membership = new Membership() {
        public RrsConfig current(int region) {
            return configs.get(region);
        }

        public RrsConfig config(RegionId region, long generation) {
            return configs.get(region.index());
        }
    };
    final VolumeClient client;

    NodeId id(String n) {
        NodeKeys k = NodeKeys.deterministic(SignatureScheme.ED25519, NodeId.of(n), 7);
        dir.register(k);
        signers.put(k.id(), k.signer());
        return k.id();
    }

    ReplicaTransportBytesTest() {
        InMemoryCoordination coord = new InMemoryCoordination();
        for (int r = 0; r < 2; r++) {
            configs.put(r, new RrsConfig(new RegionId("v", r), 0,
                    List.of(id("rs" + r + "a"), id("rs" + r + "b"), id("rs" + r + "c")),
                    List.of(id("dn" + r + "a"), id("dn" + r + "b"), id("dn" + r + "c")),
                    List.of(id("w" + r + "a"), id("w" + r + "b"))));
        }
        for (RrsConfig c : configs.values()) {
            for (NodeId rep : c.replicas()) {
                replicas.put(rep, new RegionReplica(cfg, c, rep, clientId, signers.get(rep), dir, membership,
                        (to, m) -> send(new Envelope(rep, to, m)), new InMemoryReplicaDisk(), coord, ReplicaHooks.NONE,
                        RegionSnapshot.empty(0, RegionLogRecovery.emptyVolumeRoot(cfg))));
            }
            for (NodeId h : c.metadataHolders()) {
                stores.put(h, new WitnessLog(signers.get(h), dir, new InMemoryCertificateStore(),
                        (r, g) -> configs.get(r.index()).replicaSet()));
            }
        }
        client = new VolumeClient(cfg, clientId, signers.get(clientId), dir, membership,
                (to, m) -> send(new Envelope(clientId, to, m)), new ClientListener() {
                    public void putSucceeded(long b, long f, long l, List<Certificate> certs) {
                        acked.add(b);
                    }

                    public void putFailed(long b) {
                        fail("batch " + b + " failed");
                    }

                    public void recoveryNeeded(String reason) {
                        fail(reason);
                    }

                    public void getSucceeded(long id, long block, byte[] data) {
                    }
                }, 4, 5_000);
    }

    void send(Envelope e) {
        sent.add(e);
        net.add(e);
    }

    void drain() {
        Envelope e;
        while ((e = net.poll()) != null) {
            if (hold.test(e)) {
                held.add(e);
            } else {
                deliver(e);
            }
        }
    }

    void deliver(Envelope e) {
        if (e.to().equals(clientId)) {
            client.receive(e.from(), e.m());
        } else if (replicas.containsKey(e.to())) {
            replicas.get(e.to()).receive(e.from(), e.m());
        } else if (e.m() instanceof Message.LogCertMsg l
                && stores.get(e.to()).offer(l.tentative()) == WitnessLog.Offer.STORED) {
            Statement.LogEntry st = l.tentative().statement(Statement.LogEntry.class);
            Certificate c = stores.get(e.to()).query(st.region(), st.generation(), st.index());
            var digest = c.statement(Statement.LogEntry.class).digest();
            byte[] sig = signers.get(e.to()).sign(Message.StoreAck.signedBytes(st.region().index(), st.generation(),
                    st.index(), digest));
            for (NodeId r : configs.get(st.region().index()).replicas()) {
                send(new Envelope(e.to(), r, new Message.StoreAck(st.region().index(), st.generation(), st.index(),
                        digest, sig)));
            }
        } else if (e.m() instanceof Message.CheckpointCert c && stores.containsKey(e.to())) {
            stores.get(e.to()).truncate(c.checkpoint());
        }
    }

    /** Ticks every replica once (one region-server tick, 50 ms) and delivers what that sent. */
    void tickAll() {
        replicas.values().forEach(RegionReplica::tick);
        drain();
    }

    List<BlockWrite> write64KiB() {
        List<BlockWrite> w = new ArrayList<>();
        for (int b = 0; b < BLOCKS; b++) {
            byte[] d = new byte[BLOCK];
            java.util.Arrays.fill(d, (byte) (b + 1));
            w.add(new BlockWrite(b, d));
        }
        return w;
    }

    /** Messages and bytes (MessageCodec encoding) per type of what the servers sent from {@code from} on. */
    Map<String, long[]> serverTraffic(int from) {
        Map<String, long[]> m = new TreeMap<>();
        for (Envelope e : sent.subList(from, sent.size())) {
            if (e.from().equals(clientId)) {
                continue; // the client's own request: not the replica transport between servers
            }
            long[] c = m.computeIfAbsent(e.m().getClass().getSimpleName(), k -> new long[2]);
            c[0]++;
            c[1] += MessageCodec.encode(e.m()).length;
        }
        return m;
    }

    static long bytes(Map<String, long[]> t) {
        return t.values().stream().mapToLong(c -> c[1]).sum();
    }

    static long bytesOf(Map<String, long[]> t, String type) {
        return t.getOrDefault(type, new long[2])[1];
    }

    /** Bytes of the 64 KiB write's sub-batch message (region 0). */
    int entryBytes() {
        return sent.stream().filter(e -> e.from().equals(clientId) && e.m() instanceof Message.SubBatchMsg s
                        && s.subBatch().region() == 0)
                .mapToInt(e -> MessageCodec.encode(e.m()).length).findFirst().orElseThrow();
    }

    /**
     * One batch: a block of region 1 first (so region 1 leads the batch) and the 64 KiB of region 0. Region 1's
     * replicas get nothing for now (every message to them waits), so region 0's sub-batch is logged, stored by every
     * holder and voted on, and then waits for the batch's decision: as a batch in a pipeline waits for those before
     * it. Returns the batch id.
     */
    long writeWaitingForItsDecision() {
        List<NodeId> region1 = configs.get(1).replicas();
        hold = e -> region1.contains(e.to());
        byte[] d = new byte[BLOCK];
        d[0] = 42;
        List<BlockWrite> w = new ArrayList<>();
        w.add(new BlockWrite(16, d));
        w.addAll(write64KiB());
        long batch = client.submit(w);
        drain();
        everyReplicaOfRegion0Voted();
        return batch;
    }

    void everyReplicaOfRegion0Voted() {
        for (NodeId r : configs.get(0).replicas()) {
            assertTrue(sent.stream().anyMatch(e -> e.from().equals(r) && e.m() instanceof Message.Vote v && v.yes()),
                    r + " voted YES (its entry is logged and every holder acknowledged it)");
        }
    }

    /** Delivers what waited for region 1 and ticks until the client has the batch's PUT_SUCCESS. */
    void decideAndCommit(long batch) {
        hold = e -> false;
        net.addAll(held);
        held.clear();
        drain();
        for (int i = 0; i < 40 && !acked.contains(batch); i++) {
            tickAll();
        }
        assertEquals(List.of(batch), acked, "the write commits once region 1 takes part");
    }

    /**
     * A 64 KiB write whose batch waits 5 s for its decision (as a batch in a 32-deep pipeline waits for the
     * decision of the batch before it): once every holder stored its entry, the replicas do not send the sub-batch down the
     * chain again and again. Before task net18 each replica resent it to its successor at every retransmission
     * round (0.2, 0.4, 0.8, 0.8, ... s) and the middle replica passed each copy from the primary on as well: 24
     * copies of the sub-batch in 5 s, where 2 reach every replica. Now: the two forwards (a copy per hop every
     * {@link RegionReplica#PAYLOAD_RESEND_ROUNDS} rounds, about 15 s, is the fallback for a successor that lost the
     * entry without asking). Every other message carries no payload.
     */
    @Test
    void aWaitingWriteSendsItsPayloadOncePerChainHop() {
        long batch = writeWaitingForItsDecision();
        int entry = entryBytes();
        assertTrue(entry > BLOCKS * BLOCK && entry < BLOCKS * BLOCK + 4096, "sub-batch of " + entry + " bytes");
        Map<String, long[]> firstPass = serverTraffic(0);
        assertEquals(2, firstPass.get("SubBatchMsg")[0], "one forward per chain hop: " + firstPass);

        int mark = sent.size();
        for (int t = 0; t < WAIT_TICKS; t++) {
            tickAll();
        }
        Map<String, long[]> waiting = serverTraffic(mark);
        long resent = waiting.getOrDefault("SubBatchMsg", new long[2])[0];
        assertEquals(0, resent, "the servers resent the 64 KiB sub-batch " + resent + " times in 5 s while every"
                + " replica had it; traffic while waiting: " + describe(waiting));

        decideAndCommit(batch);
        Map<String, long[]> all = serverTraffic(0);
        long payload = bytesOf(all, "SubBatchMsg");
        long metadata = bytes(all) - payload;
        long region0 = sent.stream().filter(e -> !e.from().equals(clientId) && e.m() instanceof Message.SubBatchMsg s
                && s.subBatch().region() == 0).count();
        assertEquals(2, region0, "copies of the 64 KiB sub-batch between servers over the whole write");
        // 64 KiB written; two forwards are 2.05 per byte; what else the servers sent over the whole write, 5 s of
        // waiting included (tentatives, acks, votes and decision requests resent every round, decisions, replies to
        // the client; 27,756 bytes when written): under half a byte per byte even for a write this small
        assertTrue(metadata <= 32 * 1024, "metadata bytes between servers for one 64 KiB write: " + metadata + ": "
                + describe(all));
        assertTrue(bytes(all) <= 3.0 * BLOCKS * BLOCK, "all bytes the servers sent for one 64 KiB write: " + bytes(all)
                + " = " + String.format(java.util.Locale.ROOT, "%.2f", bytes(all) / (double) (BLOCKS * BLOCK))
                + " per byte written: " + describe(all));
    }

    /** Copies of region 0's sub-batch that the servers (not the client) sent from {@code from} on, per sender. */
    Map<NodeId, Integer> payloadSends(int from) {
        Map<NodeId, Integer> m = new TreeMap<>(java.util.Comparator.comparing(NodeId::toString));
        for (Envelope e : sent.subList(from, sent.size())) {
            if (!e.from().equals(clientId) && e.m() instanceof Message.SubBatchMsg s && s.subBatch().region() == 0) {
                m.merge(e.from(), 1, Integer::sum);
            }
        }
        return m;
    }

    /**
     * Task net19: the five stores answer late (every STORE_ACK waits, as on a loaded witness path, where the acks
     * took longer than a retransmission period), so no replica can prove from the holders that its successor logged
     * the entry. The successor's own acknowledgement (CHAIN_ACK, sent once the entry is durable in its log) stops
     * its predecessor's resends: over 5 s of ticks the payload crossed each chain hop once. Before task net19 the
     * primary and the middle replica resent the 64 KiB sub-batch at every round until the holders' acks came (and
     * the middle replica passed each of the primary's copies on).
     */
    @Test
    void aSlowWitnessPathDoesNotResendThePayloadToASuccessorThatLoggedIt() {
        hold = e -> e.m() instanceof Message.StoreAck;
        long batch = client.submit(write64KiB());
        drain();
        for (int t = 0; t < WAIT_TICKS; t++) {
            tickAll();
        }
        assertFalse(held.isEmpty(), "the stores' acks waited");
        List<NodeId> reps = configs.get(0).replicas();
        assertEquals(Map.of(reps.get(0), 1, reps.get(1), 1), payloadSends(0), "copies of the 64 KiB sub-batch per"
                + " sender while the stores' acks waited " + WAIT_TICKS + " ticks (one per chain hop)");
        decideAndCommit(batch);
        assertEquals(Map.of(reps.get(0), 1, reps.get(1), 1), payloadSends(0), "copies over the whole write");
    }

    /** The first SUB_BATCH from {@code from} to {@code to} is lost (held, never delivered); the flag says it was. */
    boolean[] loseFirstSubBatch(NodeId from, NodeId to) {
        boolean[] lost = {false};
        hold = e -> {
            if (!lost[0] && e.from().equals(from) && e.to().equals(to) && e.m() instanceof Message.SubBatchMsg) {
                lost[0] = true;
                return true;
            }
            return false;
        };
        return lost;
    }

    /**
     * Hostile (task net19): the primary's forward to the middle replica is lost, and CHAIN_ACKs that must not count
     * arrive at the primary: from the middle replica with another digest, another generation, another region or
     * another index, and the right one from the last replica, which is not the primary's successor. None stops the
     * primary's resends: it sends the sub-batch again at its next round and the write commits.
     */
    @Test
    void aForgedOrMismatchedChainAckDoesNotStopTheResends() {
        List<NodeId> reps = configs.get(0).replicas();
        NodeId primary = reps.get(0);
        NodeId mid = reps.get(1);
        NodeId last = reps.get(2);
        boolean[] dropped = loseFirstSubBatch(primary, mid);
        long batch = client.submit(write64KiB());
        drain();
        assertTrue(dropped[0]);
        held.clear();
        SubBatch sb = sent.stream().filter(e -> e.m() instanceof Message.SubBatchMsg).map(
                e -> ((Message.SubBatchMsg) e.m()).subBatch()).findFirst().orElseThrow();
        var digest = cfg.hash().hash(sb.encode());
        var other = cfg.hash().hash(new byte[] {1, 2, 3});
        int mark = sent.size();
        send(new Envelope(mid, primary, new Message.ChainAck(0, 0, 0, other)));
        send(new Envelope(mid, primary, new Message.ChainAck(0, 1, 0, digest)));
        send(new Envelope(mid, primary, new Message.ChainAck(1, 0, 0, digest)));
        send(new Envelope(mid, primary, new Message.ChainAck(0, 0, 1, digest)));
        send(new Envelope(last, primary, new Message.ChainAck(0, 0, 0, digest)));
        send(new Envelope(clientId, primary, new Message.ChainAck(0, 0, 0, digest)));
        drain();
        int ticks = 0;
        while (ticks < 3 * RegionReplica.RETRANSMIT_TICKS && payloadSends(mark).getOrDefault(primary, 0) == 0) {
            tickAll();
            ticks++;
        }
        assertEquals(1, payloadSends(mark).getOrDefault(primary, 0), "the primary resent the entry to its successor"
                + " within " + ticks + " ticks despite the forged acknowledgements");
        for (int i = 0; i < 30 && !acked.contains(batch); i++) {
            tickAll();
        }
        assertEquals(List.of(batch), acked, "the write committed");
    }

    /**
     * Hostile (task net19): the last replica logged the entry and acknowledged it to the middle replica, then
     * reopens without it while the stores' acks still wait (so nothing but its own acknowledgement vouched for
     * it). It asks its peers for their log; the middle replica forgets the acknowledgement, sends it the entry at
     * its next round, takes its new acknowledgement, and does not send it again; the write commits once the stores
     * answer.
     */
    @Test
    void aSuccessorThatAckedAndReopenedWithoutTheEntryGetsItAgain() {
        hold = e -> e.m() instanceof Message.StoreAck;
        // region 1 leads the batch (its first block), so the reopened replica is not one of the batch's leader
        // replicas (those need the client's BATCH_INFO, which only the client's own retransmission brings back)
        byte[] d = new byte[BLOCK];
        d[0] = 42;
        List<BlockWrite> w = new ArrayList<>();
        w.add(new BlockWrite(16, d));
        w.addAll(write64KiB());
        long batch = client.submit(w);
        drain();
        for (int t = 0; t < 20; t++) {
            tickAll();
        }
        RrsConfig c = configs.get(0);
        NodeId mid = c.replicas().get(1);
        NodeId last = c.replicas().get(2);
        assertTrue(sent.stream().anyMatch(e -> e.from().equals(last) && e.to().equals(mid)
                && e.m() instanceof Message.ChainAck), "the last replica acknowledged the entry to the middle one");
        assertEquals(1, payloadSends(0).get(mid), "sent to the last replica once so far");
        RegionReplica reopened = new RegionReplica(cfg, c, last, clientId, signers.get(last), dir, membership,
                (to, m) -> send(new Envelope(last, to, m)), new InMemoryReplicaDisk(), new InMemoryCoordination(),
                ReplicaHooks.NONE, RegionSnapshot.empty(0, RegionLogRecovery.emptyVolumeRoot(cfg)));
        replicas.put(last, reopened);
        int mark = sent.size();
        reopened.catchUpFromPeersAtOpen();
        drain();
        int ticks = 0;
        while (ticks < 2 * RegionReplica.MAX_RETRANSMIT_TICKS && payloadSends(mark).getOrDefault(mid, 0) == 0) {
            tickAll();
            ticks++;
        }
        assertEquals(1, payloadSends(mark).getOrDefault(mid, 0), "the middle replica resent the entry to the"
                + " reopened replica within two rounds at the back-off cap; ticks: " + ticks);
        assertTrue(sent.subList(mark, sent.size()).stream().anyMatch(e -> e.from().equals(last) && e.to().equals(mid)
                && e.m() instanceof Message.ChainAck), "the reopened replica logged and acknowledged it");
        for (int t = 0; t < WAIT_TICKS; t++) {
            tickAll();
        }
        assertEquals(1, payloadSends(mark).getOrDefault(mid, 0), "not resent after the new acknowledgement");
        decideAndCommit(batch);
    }

    /** No message but the sub-batch (and the client's GET reply) carries block data: certificates carry digests. */
    @Test
    void onlySubBatchesCarryThePayload() {
        long batch = writeWaitingForItsDecision();
        for (int t = 0; t < WAIT_TICKS; t++) {
            tickAll();
        }
        decideAndCommit(batch);
        Map<String, long[]> all = serverTraffic(0);
        for (Map.Entry<String, long[]> e : all.entrySet()) {
            if (!e.getKey().equals("SubBatchMsg")) {
                long perMessage = e.getValue()[1] / e.getValue()[0];
                assertTrue(perMessage < 1024, e.getKey() + " carries " + perMessage + " bytes per message: a digest"
                        + " suffices, not the " + BLOCK + "-byte blocks");
            }
        }
        for (String t : List.of("LogCertMsg", "StoreAck", "Vote", "DecisionMsg", "PutReply")) {
            assertTrue(all.containsKey(t), t + " was sent: " + describe(all));
        }
    }

    /**
     * Hostile: the middle replica's forward is lost, and a faulty holder acknowledges its entry anyway (signed with
     * the holder's own key, the right index and digest). One holder's word does not stop the retransmission: the
     * last replica gets the sub-batch from the middle one's next round and the write commits.
     */
    @Test
    void oneLyingHolderDoesNotStopTheRetransmissionToAReplicaThatLacksTheEntry() {
        List<NodeId> reps = configs.get(0).replicas();
        NodeId mid = reps.get(1);
        NodeId last = reps.get(2);
        boolean[] dropped = loseFirstSubBatch(mid, last);
        long batch = client.submit(write64KiB());
        drain();
        assertTrue(dropped[0]);
        held.clear(); // the lost message never arrives
        SubBatch sb = sent.stream().filter(e -> e.m() instanceof Message.SubBatchMsg).map(
                e -> ((Message.SubBatchMsg) e.m()).subBatch()).findFirst().orElseThrow();
        var digest = cfg.hash().hash(sb.encode());
        NodeId liar = configs.get(0).metadataHolders().get(0);
        byte[] sig = signers.get(liar).sign(Message.StoreAck.signedBytes(0, 0, 0, digest));
        send(new Envelope(liar, mid, new Message.StoreAck(0, 0, 0, digest, sig)));
        drain();
        assertFalse(sent.stream().anyMatch(e -> e.from().equals(last) && e.m() instanceof Message.Vote),
                "the last replica has nothing to vote on");
        // within 30 ticks (1.5 s): the middle replica's next rounds (the stalled round that resends to a successor
        // the holders vouch for comes only at the fifth, after 52 ticks)
        for (int i = 0; i < 30 && !acked.contains(batch); i++) {
            tickAll();
        }
        assertEquals(List.of(batch), acked, "the middle replica resent the entry and the write committed");
    }

    /**
     * A forwarded sub-batch that is lost before every holder stored the entry is resent (after one retransmission
     * period, then backing off), so a lossy hop still commits.
     */
    @Test
    void aLostForwardIsResentAndTheWriteCommits() {
        List<NodeId> reps = configs.get(0).replicas();
        boolean[] dropped = {false};
        hold = e -> {
            if (!dropped[0] && e.from().equals(reps.get(0)) && e.m() instanceof Message.SubBatchMsg) {
                dropped[0] = true;
                return true;
            }
            return false;
        };
        long batch = client.submit(write64KiB());
        drain();
        held.clear();
        int ticks = 0;
        while (!acked.contains(batch) && ticks < 60) {
            tickAll();
            ticks++;
        }
        assertEquals(List.of(batch), acked);
        assertTrue(ticks <= 2 * RegionReplica.RETRANSMIT_TICKS + 1, "resent within two periods: " + ticks + " ticks");
    }

    /**
     * The last replica of region 0 loses its disk after its entry was stored by every holder (and voted), while the
     * batch waits for its decision, and reopens: it asks its peers for their log, which gives it no undecided entry. Its predecessor
     * sends the sub-batch again at its next round because the successor asked, not only at the rare fallback round,
     * and the write commits with the reopened replica's vote.
     */
    @Test
    void aSuccessorThatReopensWithoutTheEntryGetsItAtTheNextRound() {
        long batch = writeWaitingForItsDecision();
        for (int t = 0; t < 20; t++) {
            tickAll(); // the entry's rounds back off to the cap meanwhile
        }
        RrsConfig c = configs.get(0);
        NodeId last = c.replicas().get(2);
        NodeId mid = c.replicas().get(1);
        RegionReplica reopened = new RegionReplica(cfg, c, last, clientId, signers.get(last), dir, membership,
                (to, m) -> send(new Envelope(last, to, m)), new InMemoryReplicaDisk(), new InMemoryCoordination(),
                ReplicaHooks.NONE, RegionSnapshot.empty(0, RegionLogRecovery.emptyVolumeRoot(cfg)));
        replicas.put(last, reopened);
        int mark = sent.size();
        reopened.catchUpFromPeersAtOpen();
        drain();
        int ticks = 0;
        while (ticks < 2 * RegionReplica.MAX_RETRANSMIT_TICKS && sent.subList(mark, sent.size()).stream().noneMatch(
                e -> e.from().equals(mid) && e.to().equals(last) && e.m() instanceof Message.SubBatchMsg)) {
            tickAll();
            ticks++;
        }
        assertTrue(ticks < 2 * RegionReplica.MAX_RETRANSMIT_TICKS, "the predecessor resent the entry to the reopened"
                + " replica within two rounds at the back-off cap; it did not in " + ticks + " ticks");
        decideAndCommit(batch);
    }

    static String describe(Map<String, long[]> t) {
        StringBuilder b = new StringBuilder();
        t.forEach((k, c) -> b.append(k).append('=').append(c[0]).append(" msgs/").append(c[1]).append(" B; "));
        return b.toString();
    }
}
