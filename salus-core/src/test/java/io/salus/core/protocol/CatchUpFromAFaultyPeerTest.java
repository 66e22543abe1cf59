package io.salus.core.protocol;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.core.crypto.NodeId;
import io.salus.core.protocol.client.BlockWrite;
import io.salus.core.protocol.message.Message;
import io.salus.core.protocol.recovery.RecoveryException;
import io.salus.core.protocol.replica.RegionReplica;
import io.salus.core.protocol.replica.RegionSnapshot;
import io.salus.core.protocol.replica.ReplicaCatchUp;
import io.salus.core.protocol.replica.ReplicaHooks;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Review rv15: the catch-up of a reopened replica from a peer (ReplicaCatchUp) against a peer that is faulty. The
 * docs (salus-on-hbase.md, "Region reopen and recovery") claim a peer "can leave entries out (liveness only: the
 * chain predecessor retransmits what is unresolved) but not alter one". Uses PipelinedCommitTest's wiring (three
 * replicas per region, witness stores, in-memory disks and coordination) as a fixture.
 */
class CatchUpFromAFaultyPeerTest {

    /**
     * The peer leaves out the FIRST log entry after the certified checkpoint and sends the rest. Every entry is
     * client-signed and the entries it sends continue each other's prevNum chain, but nothing ties the first of
     * them to the certified last seq. The replica then logs the second committed entry at the first one's index
     * and applies it without the first: a write the client had acknowledged (PUT_SUCCESS from all three replicas)
     * is missing from a correct replica, which reports the same applied seq as its peers with another region root.
     */
    @Test
    void aTransferThatLeavesOutTheFirstEntryAfterTheCheckpointIsRefused() throws Exception {
        PipelinedCommitTest t = new PipelinedCommitTest();
        RrsConfig c0 = t.configs.get(0);
        NodeId lost = c0.replicas().get(1);
        NodeId peer = c0.replicas().get(0);
        int n = 2 * PipelinedCommitTest.CHECKPOINT_EVERY + 2; // two certified checkpoints, then two entries after
        for (int b = 1; b <= n; b++) {
            assertTrue(t.client.submit(List.of(new BlockWrite(b % 8, PipelinedCommitTest.data(b)))) > 0);
            t.drain();
        }
        assertEquals(n, t.acked.size(), "every write acknowledged");
        long certified = 2 * PipelinedCommitTest.CHECKPOINT_EVERY - 1;
        t.disks.get(lost).deleteAll();

        t.sent.clear();
        t.replicas.get(peer).receive(lost, new Message.StateRequest(0, 0, certified));
        Message.StateTransfer honest = null;
        for (PipelinedCommitTest.Envelope e : t.sent) {
            if (e.m() instanceof Message.StateTransfer x) {
                honest = x;
            }
        }
        assertNotNull(honest, "the peer answered");
        assertEquals(2, honest.entries().size(), "the log entries after the certified checkpoint");

        // the faulty peer's answer: the certified state as it is (it checks), the log after it without its first
        // entry (write n-1, to block (n-1) % 8), decisions as they are
        Message.StateTransfer withoutFirst = new Message.StateTransfer(0, 0, certified, honest.lastSeq(),
                honest.recordRoot(), honest.recordSeq(), honest.blocks(), List.of(honest.entries().get(1)),
                honest.decisions());
        String installed;
        try {
            ReplicaCatchUp.install(t.cfg, c0, t.clientId, t.dir, t.dir, t.membership, t.coord, t.disks.get(lost),
                    null, t.certified(c0), withoutFirst);
            installed = "installed";
        } catch (RecoveryException e) {
            installed = null;
        }
        if (installed != null) {
            // what the replica becomes when it starts from that disk (as ReplicaHost does after an install)
            RegionSnapshot base = RegionReplica.verifiedBase(t.cfg, c0, t.dir, t.membership, t.disks.get(lost),
                    t.coord);
            RegionReplica restarted = new RegionReplica(t.cfg, c0, lost, t.clientId, t.signers.get(lost), t.dir,
                    t.membership, (to, m) -> { }, t.disks.get(lost), t.coord, ReplicaHooks.NONE, base);
            restarted.logEntryReader(t.holdersOf(c0));
            long block = (n - 1) % 8;
            fail("a transfer without the first entry after the certified index " + certified + " was installed:"
                    + " the reopened replica applied seq " + restarted.appliedSeq() + " (peer: "
                    + t.replicas.get(peer).appliedSeq() + "), region root " + restarted.regionRoot() + " (peer: "
                    + t.replicas.get(peer).regionRoot() + "), and its block " + block + " holds write "
                    + Arrays.toString(Arrays.copyOf(restarted.block(block), 1)) + " instead of the acknowledged "
                    + "write [" + (n - 1) + "]");
        }
        assertEquals(-1, t.disks.get(lost).lastIndex(0), "a refused transfer writes nothing");
        // the honest transfer is still installed
        ReplicaCatchUp.Installed in = ReplicaCatchUp.install(t.cfg, c0, t.clientId, t.dir, t.dir, t.membership,
                t.coord, t.disks.get(lost), null, t.certified(c0), honest);
        assertEquals(2, in.entries());
    }
    /**
     * Review rvw22: a faulty peer puts a client-signed sub-batch that no other replica logged in place of the committed
     * (acknowledged) entry after the certified checkpoint. Such a sub-batch exists whenever the faulty replica is its
     * region's chain head: the volume's previous writer sent it there and died, the faulty replica kept it to itself,
     * and the new writer's first sub-batch to the region continues the same prevNum (both writers sign with the one
     * client key). The whole-state install at open took every transferred entry that is client-signed and continues
     * the prevNum chain, decided or not, so the reopened replica logged the substitute at the committed entry's
     * index: it can never log the committed entry there (a retransmission of it is stale against its last accepted
     * seq), so it never reaches its peers' state (no checkpoint of the region forms again, a mount finds its replicas
     * disagreeing). An undecided entry must not be taken from one peer's word (the serving replica's continuation
     * already takes only decided ones; the chain predecessor retransmits what is unresolved).
     */
    @Test
    void aTransferCannotPutAnUnloggedClientSubBatchInPlaceOfACommittedEntry() throws Exception {
        PipelinedCommitTest t = new PipelinedCommitTest();
        RrsConfig c0 = t.configs.get(0);
        NodeId lost = c0.replicas().get(1);
        NodeId peer = c0.replicas().get(0);
        int n = 2 * PipelinedCommitTest.CHECKPOINT_EVERY + 2; // two certified checkpoints, then two entries after
        write(t, 1, n);
        assertEquals(n, t.acked.size(), "every write acknowledged");
        long certified = 2 * PipelinedCommitTest.CHECKPOINT_EVERY - 1;
        t.disks.get(lost).deleteAll();
        t.sent.clear();
        t.replicas.get(peer).receive(lost, new Message.StateRequest(0, 0, certified));
        Message.StateTransfer honest = t.sent.stream().filter(e -> e.m() instanceof Message.StateTransfer)
                .map(e -> (Message.StateTransfer) e.m()).findFirst().orElseThrow();
        assertEquals(2, honest.entries().size(), "the log entries after the certified checkpoint");
        io.salus.core.protocol.message.SubBatch committed =
                io.salus.core.protocol.message.SubBatch.decode(honest.entries().get(0));
        io.salus.core.protocol.message.Put p = committed.puts().get(0);
        // the previous writer's sub-batch: same prevNum and seq, other data, a batch id nobody decided
        byte[] other = PipelinedCommitTest.data(99);
        io.salus.core.protocol.message.SubBatch unsigned = new io.salus.core.protocol.message.SubBatch(
                committed.volume(), committed.region(), committed.batchId() + 1_000, committed.leaderRegion(),
                committed.epoch(), List.of(new io.salus.core.protocol.message.Put(p.seq(), p.prevNum(), p.block(),
                other, t.cfg.hash().leafHash(other), p.volumeRoot())), null);
        io.salus.core.protocol.message.SubBatch substitute = unsigned.withSignature(
                t.signers.get(t.clientId).sign(unsigned.signedBytes()));
        Message.StateTransfer forged = with(honest, List.of(substitute.encode(), honest.entries().get(1)),
                honest.decisions());
        try {
            ReplicaCatchUp.install(t.cfg, c0, t.clientId, t.dir, t.dir, t.membership, t.coord, t.disks.get(lost),
                    null, t.certified(c0), forged);
        } catch (RecoveryException refused) {
            // refusing the whole transfer is fine too
        }
        byte[] logged = t.disks.get(lost).read(0, certified + 1);
        // the region open, then the protocol's retransmissions and one more write to the region
        RegionSnapshot base = RegionReplica.verifiedBase(t.cfg, c0, t.dir, t.membership, t.disks.get(lost), t.coord);
        RegionReplica reopened = new RegionReplica(t.cfg, c0, lost, t.clientId, t.signers.get(lost), t.dir,
                t.membership, (to, m) -> t.send(new PipelinedCommitTest.Envelope(lost, to, m)), t.disks.get(lost),
                t.coord, ReplicaHooks.NONE, base);
        reopened.logEntryReader(t.holdersOf(c0));
        t.replicas.put(lost, reopened);
        write(t, n + 1, n + 1);
        for (int i = 1; i <= 40 && t.replicas.get(peer).appliedSeq() != reopened.appliedSeq(); i++) {
            t.client.tick(1000L * i);
            t.replicas.values().forEach(RegionReplica::tick);
            t.drain();
        }
        assertTrue(logged == null || !Arrays.equals(logged, substitute.encode()),
                "the reopened replica logged the faulty peer's substitute at index " + (certified + 1)
                        + ", where its peers logged the acknowledged write " + (n - 1) + ": its applied seq is "
                        + reopened.appliedSeq() + " (peer: " + t.replicas.get(peer).appliedSeq() + "), region root "
                        + reopened.regionRoot() + " (peer: " + t.replicas.get(peer).regionRoot() + "); writes acknowledged "
                        + t.acked.size() + " of " + (n + 1));
        assertEquals(t.replicas.get(peer).appliedSeq(), reopened.appliedSeq(), "the reopened replica caught up");
        assertEquals(t.replicas.get(peer).regionRoot(), reopened.regionRoot(), "and holds its peers' state");
    }

    /**
     * Review rvw22, finding 2b (the variant {@link #aTransferCannotPutAnUnloggedClientSubBatchInPlaceOfACommittedEntry}
     * did not close): the previous writer's sub-batch that only the faulty chain head logged was then ABORTed by the
     * new writer's mount recovery (a genuine ABORT certificate of its batch, signed by the leader replicas). Its
     * substitute is "decided", so the catch-up took it in the committed entry's place and the reopened replica never
     * held the acknowledged write: it reported applied seq 11 like its peers with another region root, its block 1
     * holding write 1 instead of the acknowledged write 9 (GETs from it fail the client's check, no checkpoint of the
     * region forms, a mount finds its replicas contradicting each other). Fixed: a transferred entry is taken only
     * corroborated at its index ({@link ReplicaCatchUp.Corroboration}: its LOG_ENTRY certificate read from a holder
     * without sealing, or the other peer's transfer holding the same bytes there); this test failed before.
     */
    @Test
    void aTransferCannotPutAnAbortedUnloggedSubBatchInPlaceOfACommittedEntry() throws Exception {
        PipelinedCommitTest t = new PipelinedCommitTest();
        RrsConfig c0 = t.configs.get(0);
        NodeId lost = c0.replicas().get(1);
        NodeId peer = c0.replicas().get(0);
        int n = 2 * PipelinedCommitTest.CHECKPOINT_EVERY + 2;
        write(t, 1, n);
        long certified = 2 * PipelinedCommitTest.CHECKPOINT_EVERY - 1;
        t.disks.get(lost).deleteAll();
        t.sent.clear();
        t.replicas.get(peer).receive(lost, new Message.StateRequest(0, 0, certified));
        Message.StateTransfer honest = t.sent.stream().filter(e -> e.m() instanceof Message.StateTransfer)
                .map(e -> (Message.StateTransfer) e.m()).findFirst().orElseThrow();
        io.salus.core.protocol.message.SubBatch committed =
                io.salus.core.protocol.message.SubBatch.decode(honest.entries().get(0));
        io.salus.core.protocol.message.Put p = committed.puts().get(0);
        byte[] other = PipelinedCommitTest.data(99);
        long oldBatch = committed.batchId() + 1_000;
        io.salus.core.protocol.message.SubBatch unsigned = new io.salus.core.protocol.message.SubBatch(
                committed.volume(), committed.region(), oldBatch, committed.leaderRegion(), committed.epoch(),
                List.of(new io.salus.core.protocol.message.Put(p.seq(), p.prevNum(), p.block(), other,
                        t.cfg.hash().leafHash(other), p.volumeRoot())), null);
        io.salus.core.protocol.message.SubBatch substitute = unsigned.withSignature(
                t.signers.get(t.clientId).sign(unsigned.signedBytes()));
        // the ABORT the mount recovery got from the leader replicas for the previous writer's batch
        RrsConfig leader = t.configs.get(committed.leaderRegion());
        io.salus.core.cert.Statement.Decision abort = new io.salus.core.cert.Statement.Decision(false,
                committed.volume(), oldBatch, p.seq(), p.seq(), leader.region(), leader.generation());
        List<io.salus.core.cert.Certificate> tentatives = new ArrayList<>();
        for (NodeId l : leader.replicas()) {
            tentatives.add(io.salus.core.cert.Certificate.sign(io.salus.core.cert.CertType.TENTATIVE_ABORT, abort,
                    t.signers.get(l)));
        }
        List<io.salus.core.cert.Certificate> decisions = new ArrayList<>(honest.decisions());
        decisions.add(io.salus.core.cert.Certificate.combine(tentatives));
        Message.StateTransfer forged = with(honest, List.of(substitute.encode(), honest.entries().get(1)), decisions);
        try {
            ReplicaCatchUp.install(t.cfg, c0, t.clientId, t.dir, t.dir, t.membership, t.coord, t.disks.get(lost),
                    null, t.certified(c0), forged);
        } catch (RecoveryException refused) {
            // refusing the whole transfer is fine too
        }
        byte[] logged = t.disks.get(lost).read(0, certified + 1);
        RegionSnapshot base = RegionReplica.verifiedBase(t.cfg, c0, t.dir, t.membership, t.disks.get(lost), t.coord);
        RegionReplica reopened = new RegionReplica(t.cfg, c0, lost, t.clientId, t.signers.get(lost), t.dir,
                t.membership, (to, m) -> t.send(new PipelinedCommitTest.Envelope(lost, to, m)), t.disks.get(lost),
                t.coord, ReplicaHooks.NONE, base);
        reopened.logEntryReader(t.holdersOf(c0));
        t.replicas.put(lost, reopened);
        write(t, n + 1, n + 1);
        for (int i = 1; i <= 40 && !t.replicas.get(peer).regionRoot().equals(reopened.regionRoot()); i++) {
            t.client.tick(1000L * i);
            t.replicas.values().forEach(RegionReplica::tick);
            t.drain();
        }
        assertTrue(logged == null || !Arrays.equals(logged, substitute.encode()),
                "the reopened replica logged the faulty peer's aborted substitute at index " + (certified + 1)
                        + ", where its peers logged the acknowledged write " + (n - 1) + ": its applied seq is "
                        + reopened.appliedSeq() + " (peer: " + t.replicas.get(peer).appliedSeq() + "), region root "
                        + reopened.regionRoot() + " (peer: " + t.replicas.get(peer).regionRoot() + "), block "
                        + p.block() + " holds " + Arrays.toString(Arrays.copyOf(reopened.block(p.block() % 8), 1))
                        + "; writes acknowledged " + t.acked.size() + " of " + (n + 1));
        assertEquals(t.replicas.get(peer).regionRoot(), reopened.regionRoot(), "the reopened replica holds its peers'"
                + " state");
    }

    /**
     * An honest crash, no faulty peer: a replica's Salus log is lost (its DataNode disk) while its region has no
     * CHECKPOINT certificate yet (fewer than {@code checkpointEvery} entries in the region: every
     * region of a young volume). {@link RegionReplica#verifiedBase} then returns the empty generation-0 state ("starts
     * empty"), so the region open neither refuses it nor catches it up from a peer (that needs a certificate): the
     * replica serves from an empty log. The next sub-batch's prevNum names the seq its peers accepted last, so it
     * waits for predecessors that nobody sends again (they are resolved at its peers), never votes, and every later
     * write of the region (and of every batch that touches it) stalls for good. Fixed: a sub-batch that waits
     * {@link RegionReplica#STALLED_ROUNDS} rounds for a missing predecessor makes the replica ask its peers for their
     * log and take the entries that continue its own, each decided (this test reopens the replica without the
     * open-time request, {@link RegionReplica#catchUpFromPeersAtOpen}, to show the stall path alone).
     */
    @Test
    void aReplicaWhoseLogIsLostBeforeTheFirstCheckpointDoesNotStallItsRegion() throws Exception {
        PipelinedCommitTest t = new PipelinedCommitTest();
        RrsConfig c0 = t.configs.get(0);
        NodeId lost = c0.replicas().get(1);
        int n = PipelinedCommitTest.CHECKPOINT_EVERY - 1; // no certificate yet
        for (int b = 1; b <= n; b++) {
            assertTrue(t.client.submit(List.of(new BlockWrite(b % 8, PipelinedCommitTest.data(b)))) > 0);
            t.drain();
        }
        assertEquals(n, t.acked.size(), "every write acknowledged");
        assertTrue(t.coord.latestCheckpoint(c0.region(), c -> true).isEmpty(), "no certificate yet");
        t.disks.get(lost).deleteAll();
        // the region open (ReplicaHost): the base the replica may start from, then the replica (restart replay)
        RegionSnapshot base = RegionReplica.verifiedBase(t.cfg, c0, t.dir, t.membership, t.disks.get(lost), t.coord);
        RegionReplica reopened = new RegionReplica(t.cfg, c0, lost, t.clientId, t.signers.get(lost), t.dir,
                t.membership, (to, m) -> t.send(new PipelinedCommitTest.Envelope(lost, to, m)), t.disks.get(lost),
                t.coord, ReplicaHooks.NONE, base);
        reopened.logEntryReader(t.holdersOf(c0));
        t.replicas.put(lost, reopened);
        assertTrue(t.client.submit(List.of(new BlockWrite(5, PipelinedCommitTest.data(50)))) > 0);
        t.drain();
        for (int i = 1; i <= 40 && t.acked.size() == n; i++) { // retransmissions: the client's and the replicas'
            t.client.tick(1000L * i);
            t.replicas.values().forEach(RegionReplica::tick);
            t.drain();
        }
        assertEquals(n + 1, t.acked.size(), "the write after the reopen never committed: the reopened replica's"
                + " applied seq is " + reopened.appliedSeq() + " (its peers: " + t.replicas.get(c0.replicas().get(0))
                .appliedSeq() + "), committed index " + reopened.committedIndex() + ", base " + base.throughIndex()
                + "; recovery asked for: " + t.recoveryReasons);
    }

    /**
     * The other half of {@link ReplicaCatchUp.Corroboration} (review rvw22 finding 2b): an entry no holder has a
     * LOG_ENTRY certificate of (here: collected; in a run, an entry the catching-up replica never logged, so none
     * formed) is taken once BOTH peers transfer the same bytes at its index, not on one peer's word (a peer that
     * transfers other bytes there is {@link #aTransferCannotPutAnAbortedUnloggedSubBatchInPlaceOfACommittedEntry}).
     * A replica that lost its log is itself one fault, so at most one of its
     * peers is faulty, and two transfers agree only on what a correct replica logged.
     */
    @Test
    void anEntryWithoutItsCertificateIsTakenOnlyWhenBothPeersTransferTheSameBytes() throws Exception {
        PipelinedCommitTest t = new PipelinedCommitTest();
        RrsConfig c0 = t.configs.get(0);
        NodeId lost = c0.replicas().get(1);
        NodeId first = c0.replicas().get(0);
        NodeId second = c0.replicas().get(2);
        int n = PipelinedCommitTest.CHECKPOINT_EVERY - 1; // no checkpoint: the catch-up starts at index 0
        write(t, 1, n);
        assertEquals(n, t.acked.size());
        for (NodeId h : c0.metadataHolders()) {
            t.stores.get(h).store().truncatePrefix(c0.region(), 0, n); // no holder can corroborate any entry now
        }
        t.disks.get(lost).deleteAll();
        RegionReplica reopened = reopen(t, c0, lost);
        t.hold = e -> e.m() instanceof Message.StateTransfer && e.to().equals(lost);
        reopened.catchUpFromPeersAtOpen();
        t.drain();
        Message.StateTransfer fromFirst = null;
        Message.StateTransfer fromSecond = null;
        for (PipelinedCommitTest.Envelope e : t.held) {
            if (e.from().equals(first)) {
                fromFirst = (Message.StateTransfer) e.m();
            } else if (e.from().equals(second)) {
                fromSecond = (Message.StateTransfer) e.m();
            }
        }
        assertNotNull(fromFirst);
        assertNotNull(fromSecond);
        assertEquals(n, fromFirst.entries().size());
        t.held.clear();
        reopened.receive(first, fromFirst);
        assertEquals(0, reopened.peerLogEntries(), "an entry without its LOG_ENTRY certificate was taken on one"
                + " peer's word");
        // asked again: the first peer's transfer again is still one peer's word
        reopened.catchUpFromPeersAtOpen();
        t.drain();
        t.held.clear();
        reopened.receive(first, fromFirst);
        assertEquals(0, reopened.peerLogEntries(), "the first peer alone again");
        // then the second peer's: both transferred the same bytes at every index, every entry is taken
        reopened.catchUpFromPeersAtOpen();
        t.drain();
        t.held.clear();
        reopened.receive(second, fromSecond);
        assertEquals(n, reopened.peerLogEntries(), "both peers transferred the same entries");
        assertEquals(t.replicas.get(first).appliedSeq(), reopened.appliedSeq());
        assertEquals(t.replicas.get(first).regionRoot(), reopened.regionRoot());
        t.hold = e -> false;
        write(t, n + 1, n + 1);
        assertEquals(n + 1, t.acked.size(), "the region goes on");
    }

    /**
     * The certificate half of {@link ReplicaCatchUp.Corroboration} against forged and misbound certificates: the
     * genuine LOG_ENTRY of a slot corroborates exactly its entry there; the same certificate for another index, the
     * slot's certificate for another entry's bytes, one replica's TENTATIVE_LOG_ENTRY, a LOG_ENTRY with a signature of
     * a node outside the RRS or with a replica's signature over another statement, and one of another generation
     * corroborate nothing; a holder answering a forged certificate first does not hide the genuine one another holder
     * stores ({@link io.salus.core.protocol.replica.LogEntryReader} takes the first that proves).
     */
    @Test
    void aForgedStaleOrMisboundLogEntryCertificateCorroboratesNothing() {
        PipelinedCommitTest t = new PipelinedCommitTest();
        RrsConfig c0 = t.configs.get(0);
        NodeId peer = c0.replicas().get(0);
        write(t, 1, 3);
        byte[] e0 = t.disks.get(peer).read(0, 0);
        byte[] e1 = t.disks.get(peer).read(0, 1);
        io.salus.core.cert.Certificate genuine = t.stores.get(c0.metadataHolders().get(0)).store()
                .get(c0.region(), 0, 0).orElseThrow();
        assertTrue(ReplicaCatchUp.logEntryProves(t.cfg, c0, t.dir, genuine, 0, e0), "the genuine certificate");
        assertFalse(ReplicaCatchUp.logEntryProves(t.cfg, c0, t.dir, genuine, 1, e0), "for another index");
        assertFalse(ReplicaCatchUp.logEntryProves(t.cfg, c0, t.dir, genuine, 0, e1), "for another entry's bytes");
        io.salus.core.cert.Statement.LogEntry st = genuine.statement(io.salus.core.cert.Statement.LogEntry.class);
        List<io.salus.core.cert.Certificate> tentatives = new ArrayList<>();
        for (NodeId r : c0.replicas()) {
            tentatives.add(io.salus.core.cert.Certificate.sign(io.salus.core.cert.CertType.TENTATIVE_LOG_ENTRY, st,
                    t.signers.get(r)));
        }
        assertTrue(ReplicaCatchUp.logEntryProves(t.cfg, c0, t.dir, io.salus.core.cert.Certificate.combine(tentatives),
                0, e0), "the three replicas' tentatives combined");
        assertFalse(ReplicaCatchUp.logEntryProves(t.cfg, c0, t.dir, tentatives.get(0), 0, e0),
                "one replica's tentative");
        List<io.salus.core.cert.Certificate> outsider = new ArrayList<>(tentatives.subList(0, 2));
        outsider.add(io.salus.core.cert.Certificate.sign(io.salus.core.cert.CertType.TENTATIVE_LOG_ENTRY, st,
                t.signers.get(t.configs.get(1).replicas().get(0)))); // a replica of another region
        assertFalse(ReplicaCatchUp.logEntryProves(t.cfg, c0, t.dir, io.salus.core.cert.Certificate.combine(outsider),
                0, e0), "a signature of a node outside the RRS");
        io.salus.core.cert.Certificate sigOverOther = io.salus.core.cert.Certificate.sign(
                io.salus.core.cert.CertType.TENTATIVE_LOG_ENTRY, new io.salus.core.cert.Statement.LogEntry(
                        st.region(), st.generation(), 1, st.digest(), st.length()), t.signers.get(c0.replicas().get(2)));
        List<io.salus.core.cert.Certificate.Sig> sigs = new ArrayList<>(
                io.salus.core.cert.Certificate.combine(tentatives.subList(0, 3)).signatures());
        sigs.set(2, sigOverOther.signatures().get(0)); // the third replica's signature, over index 1
        assertFalse(ReplicaCatchUp.logEntryProves(t.cfg, c0, t.dir, io.salus.core.cert.Certificate.of(
                io.salus.core.cert.CertType.LOG_ENTRY, genuine.scheme(), st, sigs), 0, e0),
                "a replica's signature over another statement");
        List<io.salus.core.cert.Certificate> otherGen = new ArrayList<>();
        io.salus.core.cert.Statement.LogEntry gen1 = new io.salus.core.cert.Statement.LogEntry(st.region(), 1,
                st.index(), st.digest(), st.length());
        for (NodeId r : c0.replicas()) {
            otherGen.add(io.salus.core.cert.Certificate.sign(io.salus.core.cert.CertType.TENTATIVE_LOG_ENTRY, gen1,
                    t.signers.get(r)));
        }
        assertFalse(ReplicaCatchUp.logEntryProves(t.cfg, c0, t.dir, io.salus.core.cert.Certificate.combine(otherGen),
                0, e0), "a certificate of another generation");
        // holders answering: a forged one first, then the genuine one
        io.salus.core.cert.Certificate forged = io.salus.core.cert.Certificate.combine(outsider);
        io.salus.core.protocol.replica.LogEntryReader forgedFirst = (region, generation, index, proves) -> {
            for (io.salus.core.cert.Certificate c : List.of(forged, genuine)) {
                if (proves.test(c)) {
                    return c;
                }
            }
            return null;
        };
        assertTrue(ReplicaCatchUp.certifiedBy(t.cfg, c0, t.dir, forgedFirst).corroborated(0, e0));
        assertFalse(ReplicaCatchUp.certifiedBy(t.cfg, c0, t.dir, forgedFirst).corroborated(0, e1));
        assertFalse(ReplicaCatchUp.certifiedBy(t.cfg, c0, t.dir, (region, generation, index, proves) -> {
            throw new IllegalStateException("no holder answered");
        }).corroborated(0, e0), "no answer corroborates nothing");
    }

    /** Writes {@code n} one-block writes to region 0 (block b % 8 holds write b), each drained. */
    private static void write(PipelinedCommitTest t, int from, int to) {
        for (int b = from; b <= to; b++) {
            assertTrue(t.client.submit(List.of(new BlockWrite(b % 8, PipelinedCommitTest.data(b)))) > 0);
            t.drain();
        }
    }

    /** The region open of {@code rep} over its (emptied) disk, as ReplicaHost does: verified base, then the replica. */
    private static RegionReplica reopen(PipelinedCommitTest t, RrsConfig c, NodeId rep) throws RecoveryException {
        RegionSnapshot base = RegionReplica.verifiedBase(t.cfg, c, t.dir, t.membership, t.disks.get(rep), t.coord);
        assertEquals(-1, base.throughIndex(), "no certificate: the empty generation-0 state");
        RegionReplica r = new RegionReplica(t.cfg, c, rep, t.clientId, t.signers.get(rep), t.dir, t.membership,
                (to, m) -> t.send(new PipelinedCommitTest.Envelope(rep, to, m)), t.disks.get(rep), t.coord,
                ReplicaHooks.NONE, base);
        r.logEntryReader(t.holdersOf(c));
        t.replicas.put(rep, r);
        return r;
    }

    /**
     * Finding 2 at the region open (ReplicaHost calls {@link RegionReplica#catchUpFromPeersAtOpen} when the base is
     * the empty generation-0 state): the replica whose log was lost asks its peers at once and reaches their state
     * before any further write (a new writer's mount, which needs the three replicas to agree, does not wait for a
     * write that would reveal the gap).
     */
    @Test
    void aReplicaReopenedWithoutItsLogBeforeTheFirstCheckpointCatchesUpAtOpen() throws Exception {
        PipelinedCommitTest t = new PipelinedCommitTest();
        RrsConfig c0 = t.configs.get(0);
        NodeId lost = c0.replicas().get(2);
        RegionReplica peer = t.replicas.get(c0.replicas().get(0));
        int n = PipelinedCommitTest.CHECKPOINT_EVERY - 1;
        write(t, 1, n);
        assertEquals(n, t.acked.size());
        t.disks.get(lost).deleteAll();
        RegionReplica reopened = reopen(t, c0, lost);
        reopened.catchUpFromPeersAtOpen();
        t.drain();
        assertEquals(n, reopened.peerLogEntries(), "the entries its peers logged, taken at open");
        assertEquals(peer.appliedSeq(), reopened.appliedSeq());
        assertEquals(peer.regionRoot(), reopened.regionRoot());
        assertEquals(n - 1, t.disks.get(lost).lastIndex(0), "the entries are on its own disk again");
        for (int b = 1; b <= n; b++) {
            assertArrayEquals(PipelinedCommitTest.data(b), reopened.block(b % 8));
        }
        // and the region goes on: the first checkpoint is certified over the three replicas
        write(t, n + 1, n + PipelinedCommitTest.CHECKPOINT_EVERY);
        assertEquals(n + PipelinedCommitTest.CHECKPOINT_EVERY, t.acked.size());
        assertEquals(PipelinedCommitTest.CHECKPOINT_EVERY - 1, ReplicaCatchUp.certified(c0, t.dir, t.membership, t.coord)
                .throughIndex());
    }

    /**
     * A fresh region (all three replicas empty) does not wait for its peers: each replica serves at once and asks
     * both peers once, each answers with an empty log, and nothing is asked again.
     */
    @Test
    void aFreshRegionStartsWithoutWaitingForItsPeers() {
        PipelinedCommitTest t = new PipelinedCommitTest();
        RrsConfig c0 = t.configs.get(0);
        c0.replicas().forEach(r -> t.replicas.get(r).catchUpFromPeersAtOpen());
        write(t, 1, 2 * PipelinedCommitTest.CHECKPOINT_EVERY);
        assertEquals(2 * PipelinedCommitTest.CHECKPOINT_EVERY, t.acked.size(), "written without a tick");
        for (int i = 0; i < 10 * RegionReplica.RETRANSMIT_TICKS; i++) {
            t.replicas.values().forEach(RegionReplica::tick);
            t.drain();
        }
        for (NodeId r : c0.replicas()) {
            assertEquals(2, t.replicas.get(r).peerLogRequests(), r + ": one request to each peer, both answered");
            assertEquals(0, t.replicas.get(r).peerLogEntries(), r.toString());
        }
        assertEquals(2 * PipelinedCommitTest.CHECKPOINT_EVERY - 1, ReplicaCatchUp.certified(c0, t.dir, t.membership,
                t.coord).throughIndex());
    }

    /**
     * The catch-up of finding 2 against a faulty peer: what it sends is taken only as far as it continues the
     * replica's own log (first prevNum = its last accepted seq, 0 here), entry by entry with the chain, each
     * client-signed and decided (COMMIT/ABORT with its three leader signatures). A transfer without decisions, without
     * its first entry, reordered, or with an altered entry is not taken (past the alteration); an answer nobody asked
     * for is not read. Then the honest answer is.
     */
    @Test
    void aPeerCannotMakeTheCatchUpTakeAnUndecidedSkippedReorderedOrAlteredEntry() throws Exception {
        PipelinedCommitTest t = new PipelinedCommitTest();
        RrsConfig c0 = t.configs.get(0);
        NodeId lost = c0.replicas().get(1);
        NodeId peer = c0.replicas().get(0);
        int n = PipelinedCommitTest.CHECKPOINT_EVERY - 1;
        write(t, 1, n);
        t.disks.get(lost).deleteAll();
        RegionReplica reopened = reopen(t, c0, lost);
        t.hold = e -> e.m() instanceof Message.StateTransfer && e.to().equals(lost);
        t.sent.clear();
        t.replicas.get(peer).receive(lost, new Message.StateRequest(0, 0, -1));
        Message.StateTransfer honest = t.sent.stream().filter(e -> e.m() instanceof Message.StateTransfer)
                .map(e -> (Message.StateTransfer) e.m()).findFirst().orElseThrow();
        t.drain();
        t.held.clear();
        assertEquals(-1, honest.throughIndex());
        assertEquals(n, honest.entries().size());
        List<byte[]> es = honest.entries();
        byte[] altered = es.get(1).clone();
        altered[altered.length / 2] ^= 0x5a; // in its block data: the client signature (or the data hash) fails
        java.util.Map<String, Message.StateTransfer> forged = new java.util.LinkedHashMap<>();
        forged.put("without decisions", with(honest, es, List.of()));
        forged.put("without its first entry", with(honest, es.subList(1, n), honest.decisions()));
        forged.put("reordered", with(honest, List.of(es.get(1), es.get(0), es.get(2)), honest.decisions()));
        // not asked: dropped unread
        reopened.receive(peer, honest);
        assertEquals(0, reopened.peerLogEntries(), "an answer nobody asked for was read");
        for (var f : forged.entrySet()) {
            reopened.catchUpFromPeersAtOpen();
            t.drain();
            t.held.clear();
            reopened.receive(peer, f.getValue());
            assertEquals(0, reopened.peerLogEntries(), "a transfer " + f.getKey() + " was taken");
            assertEquals(-1, t.disks.get(lost).lastIndex(0), "a transfer " + f.getKey() + " wrote to the disk");
            assertEquals(0, reopened.appliedSeq(), f.getKey());
        }
        reopened.catchUpFromPeersAtOpen();
        t.drain();
        t.held.clear();
        reopened.receive(peer, with(honest, List.of(es.get(0), altered, es.get(2)), honest.decisions()));
        assertEquals(1, reopened.peerLogEntries(), "only the entry before the altered one is taken");
        assertEquals(0, t.disks.get(lost).lastIndex(0));
        // the honest answer (its first entry is the replica's own now)
        reopened.catchUpFromPeersAtOpen();
        t.drain();
        t.held.clear();
        reopened.receive(peer, honest);
        assertEquals(n, reopened.peerLogEntries());
        assertEquals(t.replicas.get(peer).appliedSeq(), reopened.appliedSeq());
        assertEquals(t.replicas.get(peer).regionRoot(), reopened.regionRoot());
        t.hold = e -> false;
        write(t, n + 1, n + 1);
        assertEquals(n + 1, t.acked.size(), "the region goes on");
    }

    private static Message.StateTransfer with(Message.StateTransfer x, List<byte[]> entries,
                                              List<io.salus.core.cert.Certificate> decisions) {
        return new Message.StateTransfer(x.region(), x.generation(), x.throughIndex(), x.lastSeq(), x.recordRoot(),
                x.recordSeq(), x.blocks(), entries, decisions);
    }
}
