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
        int n = 2 * RegionReplica.CHECKPOINT_EVERY + 2; // two certified checkpoints, then two entries after
        for (int b = 1; b <= n; b++) {
            assertTrue(t.client.submit(List.of(new BlockWrite(b % 8, PipelinedCommitTest.data(b)))) > 0);
            t.drain();
        }
        assertEquals(n, t.acked.size(), "every write acknowledged");
        long certified = 2 * RegionReplica.CHECKPOINT_EVERY - 1;
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
                    null, withoutFirst);
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
                t.coord, t.disks.get(lost), null, honest);
        assertEquals(2, in.entries());
    }
    /**
     * An honest crash, no faulty peer: a replica's Salus log is lost (its DataNode disk) while its region has no
     * CHECKPOINT certificate yet (fewer than {@link RegionReplica#CHECKPOINT_EVERY} entries in the region: every
     * region of a young volume). {@link RegionReplica#verifiedBase} then returns the empty generation-0 state ("starts
     * empty"), so the region open neither refuses it nor catches it up from a peer (that needs a certificate): the
     * replica serves from an empty log. The next sub-batch's prevNum names the seq its peers accepted last, so it
     * waits for predecessors that nobody sends again (they are resolved at its peers), never votes, and every later
     * write of the region (and of every batch that touches it) stalls for good.
     */
    @Test
    void aReplicaWhoseLogIsLostBeforeTheFirstCheckpointDoesNotStallItsRegion() throws Exception {
        PipelinedCommitTest t = new PipelinedCommitTest();
        RrsConfig c0 = t.configs.get(0);
        NodeId lost = c0.replicas().get(1);
        int n = RegionReplica.CHECKPOINT_EVERY - 1; // no certificate yet
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
}
