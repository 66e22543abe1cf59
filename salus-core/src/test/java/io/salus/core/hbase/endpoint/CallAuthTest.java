package io.salus.core.hbase.endpoint;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.SignatureScheme;
import io.salus.core.hbase.VolumeGeometry;
import io.salus.core.hbase.endpoint.generated.SalusReplicaProtos;
import io.salus.core.hbase.endpoint.generated.SalusReplicaProtos.Envelope;
import io.salus.core.protocol.message.Message;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Caller authentication of the replica endpoint ({@link CallAuth}, review rv13), without a cluster: who the
 * endpoint believes made a call, replays, tampering, and which senders a signer speaks for.
 */
class CallAuthTest {
    final VolumeAddressing a = new VolumeAddressing(new VolumeGeometry("v", 2 * 16 * 4096, 4096, 16));
    final EndpointKeyring keys = EndpointKeyring.deterministic(SignatureScheme.ED25519, 7, a);
    final VolumeAddressing.Address dest = a.address(0, 0);
    final CallAuth.Checker checker = new CallAuth.Checker(a, 0, 0, keys.verifier());
    final String client = a.client().name();

    List<Envelope> get(NodeId from) {
        return List.of(ReplicaLink.envelope(from, a.replica(0, 0), new Message.GetRequest(1, 0, 0)));
    }

    @Test
    void theClientsSignedCallsAreItsOwnAndEachCounterIsAcceptedOnce() {
        CallAuth.Signing s = new CallAuth.Signing("v", keys.signer(a.client()), 3);
        List<Envelope> env = get(a.client());
        SalusReplicaProtos.CallAuth first = s.sign(CallAuth.DELIVER, dest, client, env);
        SalusReplicaProtos.CallAuth second = s.sign(CallAuth.DELIVER, dest, client, env);
        assertTrue(second.getCounter() > first.getCounter());
        assertEquals(a.client(), checker.authenticate(CallAuth.DELIVER, first, client, env));
        assertEquals(a.client(), checker.authenticate(CallAuth.DELIVER, second, client, env));
        assertNull(checker.authenticate(CallAuth.DELIVER, second, client, env), "a replayed call");
        assertNull(checker.authenticate(CallAuth.DELIVER, first, client, env), "an older call replayed");
        assertEquals(2, checker.counters().get("authReplayedCalls"));
        // a poll in flight beside a deliver: its own counter space, not a replay
        SalusReplicaProtos.CallAuth poll = s.sign(CallAuth.POLL, dest, client, List.of());
        assertEquals(a.client(), checker.authenticate(CallAuth.POLL, poll, client, List.of()));
        assertNull(checker.authenticate(CallAuth.DELIVER, poll, client, List.of()), "a poll's signature as a deliver");
    }

    @Test
    void unsignedTamperedMisaddressedOrForeignKeyedCallsAreNobodys() {
        CallAuth.Signing s = new CallAuth.Signing("v", keys.signer(a.client()), 0);
        List<Envelope> env = get(a.client());
        assertNull(checker.authenticate(CallAuth.DELIVER, null, client, env));
        assertNull(checker.authenticate(CallAuth.POLL, null, client, List.of()));
        // other envelopes than the ones signed
        SalusReplicaProtos.CallAuth c = s.sign(CallAuth.DELIVER, dest, client, env);
        List<Envelope> other = List.of(ReplicaLink.envelope(a.client(), a.replica(0, 0),
                new Message.GetRequest(2, 0, Long.MAX_VALUE)));
        assertNull(checker.authenticate(CallAuth.DELIVER, c, client, other));
        // signed for another region
        SalusReplicaProtos.CallAuth elsewhere = s.sign(CallAuth.DELIVER, a.address(0, 1), client, env);
        assertNull(checker.authenticate(CallAuth.DELIVER, elsewhere, client, env));
        // signed for another reply_to
        SalusReplicaProtos.CallAuth noReplies = s.sign(CallAuth.DELIVER, dest, null, env);
        assertNull(checker.authenticate(CallAuth.DELIVER, noReplies, client, env));
        // the client's name with another key (a keyring of another seed: what a keyless caller can make)
        EndpointKeyring mine = EndpointKeyring.deterministic(SignatureScheme.ED25519, 8, a);
        SalusReplicaProtos.CallAuth forged = new CallAuth.Signing("v", mine.signer(a.client()), 0)
                .sign(CallAuth.DELIVER, dest, client, env);
        assertNull(checker.authenticate(CallAuth.DELIVER, forged, client, env));
        // a metadata holder or an unknown node does not sign calls
        SalusReplicaProtos.CallAuth store = new CallAuth.Signing("v", keys.signer(a.hostedBy(0, 1).get(1)), 0)
                .sign(CallAuth.DELIVER, dest, null, env);
        assertNull(checker.authenticate(CallAuth.DELIVER, store, null, env));
        assertEquals(2, checker.counters().get("authUnsignedCalls"));
        assertEquals(5, checker.counters().get("authBadSignatureCalls"));
        assertTrue(checker.signers().isEmpty(), "no counter kept for a caller that did not authenticate");
    }

    @Test
    void aNewWriterEpochStartsAFreshCounterSpaceSoAClockBehindDoesNotWedgeIt() {
        List<Envelope> env = get(a.client());
        CallAuth.Signing old = new CallAuth.Signing("v", keys.signer(a.client()), 4);
        assertEquals(a.client(), checker.authenticate(CallAuth.DELIVER, old.sign(CallAuth.DELIVER, dest, client, env),
                client, env));
        // the new writer's counters lie far below the old writer's (a clock an hour behind): same epoch would be
        // refused, a higher epoch is accepted
        SalusReplicaProtos.CallAuth behind = signWithCounter(4, CallAuth.nowMicros() - 3_600_000_000L, env);
        assertNull(checker.authenticate(CallAuth.DELIVER, behind, client, env));
        SalusReplicaProtos.CallAuth newer = signWithCounter(5, CallAuth.nowMicros() - 3_600_000_000L, env);
        assertEquals(a.client(), checker.authenticate(CallAuth.DELIVER, newer, client, env));
        // and the fenced old writer still gets through (it must hear from the replicas that it is fenced)
        assertEquals(a.client(), checker.authenticate(CallAuth.DELIVER, old.sign(CallAuth.DELIVER, dest, client, env),
                client, env));
        // a restarted process of the same epoch starts at its wall clock, above its predecessor's counters
        CallAuth.Signing restarted = new CallAuth.Signing("v", keys.signer(a.client()), 4);
        assertEquals(a.client(), checker.authenticate(CallAuth.DELIVER,
                restarted.sign(CallAuth.DELIVER, dest, client, env), client, env));
    }

    private SalusReplicaProtos.CallAuth signWithCounter(long epoch, long counter, List<Envelope> env) {
        byte[] sig = keys.signer(a.client()).sign(CallAuth.signedBytes(CallAuth.DELIVER, "v", dest, client, epoch,
                counter, client, CallAuth.digest(env)));
        return SalusReplicaProtos.CallAuth.newBuilder().setSigner(client).setEpoch(epoch).setCounter(counter)
                .setSignature(com.google.protobuf.ByteString.copyFrom(sig)).build();
    }

    @Test
    void aSignerSpeaksOnlyForItselfOrTheNodesItsRegionHosts() {
        assertTrue(checker.speaksFor(a.client(), a.client()));
        assertFalse(checker.speaksFor(a.client(), a.replica(0, 1)));
        NodeId r = a.replica(1, 2);
        for (NodeId n : a.hostedBy(1, 2)) {
            assertTrue(checker.speaksFor(r, n), r + " for " + n);
        }
        assertFalse(checker.speaksFor(r, a.client()), "a replica never speaks for the client");
        assertFalse(checker.speaksFor(r, a.replica(1, 1)), "nor for another replica");
        assertFalse(checker.speaksFor(r, a.hostedBy(0, 2).get(1)), "nor for another region's store");
    }
}
