package io.salus.core.hbase.endpoint;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.cert.CertificateVerificationException;
import io.salus.core.cert.RegionId;
import io.salus.core.cert.Statement;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.NodeKeys;
import io.salus.core.crypto.SignatureScheme;
import io.salus.core.crypto.Signer;
import io.salus.core.crypto.Verifier;
import io.salus.core.hbase.VolumeGeometry;
import io.salus.core.hbase.endpoint.generated.SalusReplicaProtos;
import io.salus.core.hbase.endpoint.generated.SalusReplicaProtos.Envelope;
import io.salus.core.merkle.HashAlgorithm;
import io.salus.core.protocol.message.Message;
import java.util.List;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;

/**
 * Signature schemes by role (task tput20): the client signs with Ed25519, the servers (replicas, metadata holders)
 * with a MAC; every verifier takes a node's scheme from the keyring, never from a signature's bytes or a
 * certificate's scheme byte. Hostile cases: a server signature under another (weaker or stronger) scheme, a client
 * write or call signed with a server-style MAC, a forged or foreign server call, a replayed server call, a witness
 * announcing a weaker scheme.
 */
class SignatureRolesTest {
    static final long SEED = 7;
    final VolumeAddressing a = new VolumeAddressing(new VolumeGeometry("v", 2 * 16 * 4096, 4096, 16));
    final EndpointKeyring keys = EndpointKeyring.deterministic(SignatureScheme.ED25519, SignatureScheme.HMAC_SHA256,
            SEED, a);
    final NodeId client = a.client();
    final NodeId r01 = a.replica(0, 1);
    final byte[] msg = {1, 2, 3, 4};

    /** A signer that writes {@code id} on signatures made with {@code keys} (a node signing in another's name). */
    static Signer as(NodeId id, NodeKeys keys) {
        Signer s = keys.signer();
        return new Signer() {
            @Override
            public NodeId id() {
                return id;
            }

            @Override
            public SignatureScheme scheme() {
                return s.scheme();
            }

            @Override
            public byte[] sign(byte[] m, int off, int len) {
                return s.sign(m, off, len);
            }
        };
    }

    Certificate tentative(Signer s) {
        return Certificate.sign(CertType.TENTATIVE_LOG_ENTRY, new Statement.LogEntry(new RegionId("v", 0), 0, 3,
                HashAlgorithm.SHA256.hash(new byte[] {9}), 10), s);
    }

    @Test
    void byDefaultTheClientSignsWithEd25519AndTheServersWithHmac() {
        EndpointKeyring k = EndpointKeyring.fromConfiguration(conf(null, null), a);
        assertEquals(SignatureScheme.ED25519, k.clientScheme());
        assertEquals(SignatureScheme.HMAC_SHA256, k.serverScheme());
        Verifier v = k.verifier();
        assertEquals(SignatureScheme.ED25519, v.schemeOf(client));
        for (NodeId n : a.hostedBy(1, 2)) { // a replica, its store, its witness
            assertEquals(SignatureScheme.HMAC_SHA256, v.schemeOf(n), n.name());
            assertEquals(SignatureScheme.HMAC_SHA256, k.signer(n).scheme(), n.name());
        }
        assertEquals(SignatureScheme.ED25519, k.signer(client).scheme());
        // the old default, all Ed25519, is two keys away; a bad name names its key
        EndpointKeyring old = EndpointKeyring.fromConfiguration(conf("ED25519", "ED25519"), a);
        assertEquals(SignatureScheme.ED25519, old.verifier().schemeOf(r01));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> EndpointKeyring.fromConfiguration(conf(null, "HMAC"), a));
        assertTrue(e.getMessage().contains(EndpointKeyring.SERVER_SCHEME_KEY), e.getMessage());
    }

    static Configuration conf(String client, String server) {
        Configuration c = new Configuration(false);
        c.setLong(EndpointKeyring.TEST_SEED_KEY, SEED);
        if (client != null) {
            c.set(EndpointKeyring.SCHEME_KEY, client);
        }
        if (server != null) {
            c.set(EndpointKeyring.SERVER_SCHEME_KEY, server);
        }
        return c;
    }

    @Test
    void aServerSignatureUnderAnotherSchemeIsRefused() {
        Verifier v = keys.verifier();
        assertTrue(v.verify(r01, msg, keys.signer(r01).sign(msg)), "the replica's own MAC");
        // a downgrade: the weak scheme's salted CRC, which anybody can compute for any node
        byte[] weak = NodeKeys.deterministic(SignatureScheme.WEAK_CRC32C, r01, SEED).signer().sign(msg);
        assertFalse(v.verify(r01, msg, weak), "a weak signature of an HMAC node");
        // the same node's secret used as an Ed25519 seed: another scheme than the keyring's
        byte[] ed = NodeKeys.deterministic(SignatureScheme.ED25519, r01, SEED).signer().sign(msg);
        assertFalse(v.verify(r01, msg, ed), "an Ed25519 signature of an HMAC node");
        // certificates: the scheme byte cannot choose the scheme either
        Certificate good = tentative(keys.signer(r01));
        good.verifyOrThrow(v, Set.of(r01));
        Certificate weakCert = tentative(NodeKeys.deterministic(SignatureScheme.WEAK_CRC32C, r01, 0).signer());
        CertificateVerificationException x = assertThrows(CertificateVerificationException.class,
                () -> weakCert.verifyOrThrow(v, Set.of(r01)));
        assertTrue(x.getMessage().contains("signs with HMAC_SHA256"), x.getMessage());
        Certificate edCert = tentative(NodeKeys.deterministic(SignatureScheme.ED25519, r01, SEED).signer());
        assertFalse(edCert.verify(v), "an Ed25519 certificate of an HMAC node");
        // decoded from bytes (what a witness or a peer receives): the same
        assertFalse(Certificate.decode(weakCert.encode()).verify(v));
        assertTrue(Certificate.decode(good.encode()).verify(v));
    }

    @Test
    void aClientWriteSignedWithAServerStyleMacIsRefused() {
        Verifier v = keys.verifier();
        assertTrue(v.verify(client, msg, keys.signer(client).sign(msg)));
        // a MAC in the client's name: under the client's own (test) secret, and under a replica's key
        byte[] mac = NodeKeys.deterministic(SignatureScheme.HMAC_SHA256, client, SEED).signer().sign(msg);
        assertFalse(v.verify(client, msg, mac), "an HMAC under the client's secret");
        assertFalse(v.verify(client, msg, keys.signer(r01).sign(msg)), "a replica's MAC in the client's name");
        // and keyed with the client's PUBLIC key, which every server holds: a MAC anybody with the keyring can make
        Signer publicMac = NodeKeys.fromSecret(SignatureScheme.HMAC_SHA256, client,
                NodeKeys.deterministic(SignatureScheme.ED25519, client, SEED).verificationKey()).signer();
        assertFalse(v.verify(client, msg, publicMac.sign(msg)), "an HMAC keyed with the client's public key");
        // a sub-batch's signature is checked this way (RegionReplica.validSubBatch): a replica's forged writes fail
        Certificate fence = Certificate.sign(CertType.WRITER_EPOCH, new Statement.WriterEpoch("v", 5),
                keys.signer(client));
        assertTrue(fence.verify(v, Set.of(client)));
        Certificate macFence = Certificate.sign(CertType.WRITER_EPOCH, new Statement.WriterEpoch("v", 5),
                as(client, NodeKeys.deterministic(SignatureScheme.HMAC_SHA256, r01, SEED)));
        assertThrows(CertificateVerificationException.class, () -> macFence.verifyOrThrow(v, Set.of(client)));
        Certificate publicMacFence = Certificate.sign(CertType.WRITER_EPOCH, new Statement.WriterEpoch("v", 6),
                publicMac);
        assertFalse(publicMacFence.verify(v, Set.of(client)), "a fence MACed with the client's public key");
        // and a call in the client's name
        CallAuth.Checker checker = new CallAuth.Checker(a, 0, 0, v);
        List<Envelope> env = List.of(ReplicaLink.envelope(client, a.replica(0, 0), new Message.GetRequest(1, 0, 0)));
        SalusReplicaProtos.CallAuth forged = new CallAuth.Signing("v",
                as(client, NodeKeys.deterministic(SignatureScheme.HMAC_SHA256, client, SEED)), 0)
                .sign(CallAuth.DELIVER, a.address(0, 0), client.name(), env);
        assertNull(checker.authenticate(CallAuth.DELIVER, forged, client.name(), env));
        SalusReplicaProtos.CallAuth forgedPublic = new CallAuth.Signing("v", publicMac, 0)
                .sign(CallAuth.DELIVER, a.address(0, 0), client.name(), env);
        assertNull(checker.authenticate(CallAuth.DELIVER, forgedPublic, client.name(), env));
        SalusReplicaProtos.CallAuth real = new CallAuth.Signing("v", keys.signer(client), 0)
                .sign(CallAuth.DELIVER, a.address(0, 0), client.name(), env);
        assertEquals(client, checker.authenticate(CallAuth.DELIVER, real, client.name(), env));
        assertEquals(2, checker.counters().get("authBadSignatureCalls"));
    }

    @Test
    void aServersCallIsAMacCheckAndForgedForeignOrReplayedServerCallsAreRefused() {
        CallAuth.Checker checker = new CallAuth.Checker(a, 0, 0, keys.verifier());
        NodeId r11 = a.replica(1, 1);
        List<Envelope> env = List.of(ReplicaLink.envelope(r11, a.replica(0, 0), new Message.GetRequest(1, 0, 0)));
        CallAuth.Signing s = new CallAuth.Signing("v", keys.signer(r11), 0);
        SalusReplicaProtos.CallAuth call = s.sign(CallAuth.DELIVER, a.address(0, 0), null, env);
        assertEquals(32, call.getSignature().size(), "an HMAC-SHA256 tag, not an Ed25519 signature");
        assertEquals(r11, checker.authenticate(CallAuth.DELIVER, call, null, env));
        assertNull(checker.authenticate(CallAuth.DELIVER, call, null, env), "replayed");
        // another replica signs in r11's name with its own key (foreign), or with r11's Ed25519 test key (wrong scheme)
        SalusReplicaProtos.CallAuth foreign = new CallAuth.Signing("v", as(r11,
                NodeKeys.deterministic(SignatureScheme.HMAC_SHA256, a.replica(1, 0), SEED)), 0)
                .sign(CallAuth.DELIVER, a.address(0, 0), null, env);
        assertNull(checker.authenticate(CallAuth.DELIVER, foreign, null, env));
        SalusReplicaProtos.CallAuth ed = new CallAuth.Signing("v",
                NodeKeys.deterministic(SignatureScheme.ED25519, r11, SEED).signer(), 0)
                .sign(CallAuth.DELIVER, a.address(0, 0), null, env);
        assertNull(checker.authenticate(CallAuth.DELIVER, ed, null, env));
        SalusReplicaProtos.CallAuth weak = new CallAuth.Signing("v",
                NodeKeys.deterministic(SignatureScheme.WEAK_CRC32C, r11, SEED).signer(), 0)
                .sign(CallAuth.DELIVER, a.address(0, 0), null, env);
        assertNull(checker.authenticate(CallAuth.DELIVER, weak, null, env));
        // a keyring of another seed (an outsider's guess at the servers' secrets)
        EndpointKeyring other = EndpointKeyring.deterministic(SignatureScheme.ED25519, SignatureScheme.HMAC_SHA256,
                SEED + 1, a);
        assertNull(checker.authenticate(CallAuth.DELIVER, new CallAuth.Signing("v", other.signer(r11), 0)
                .sign(CallAuth.DELIVER, a.address(0, 0), null, env), null, env));
        assertEquals(1, checker.counters().get("authReplayedCalls"));
        assertEquals(4, checker.counters().get("authBadSignatureCalls"));
        assertEquals(r11, checker.authenticate(CallAuth.DELIVER, s.sign(CallAuth.DELIVER, a.address(0, 0), null, env),
                null, env), "the next genuine call");
    }

    @Test
    void aWitnessMaySignWithTheServersSchemeOrAStrongerOneNeverAWeakerOne() {
        NodeId holder = a.hostedBy(0, 1).get(1);
        keys.useWitnessKeys(List.of(holder));
        Verifier v = keys.replicaVerifier();
        assertNull(v.schemeOf(holder), "not before the witness announced its key");
        NodeKeys weak = NodeKeys.deterministic(SignatureScheme.WEAK_CRC32C, holder, 1);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> keys.registerHolderKey(holder, SignatureScheme.WEAK_CRC32C, weak.verificationKey()));
        assertTrue(e.getMessage().contains("weaker"), e.getMessage());
        assertFalse(v.verify(holder, msg, weak.signer().sign(msg)));
        NodeKeys ed = NodeKeys.deterministic(SignatureScheme.ED25519, holder, 99);
        keys.registerHolderKey(holder, SignatureScheme.ED25519, ed.verificationKey());
        assertEquals(SignatureScheme.ED25519, v.schemeOf(holder));
        assertTrue(v.verify(holder, msg, ed.signer().sign(msg)), "the witness's own Ed25519 key");
        assertFalse(v.verify(holder, msg, keys.signer(holder).sign(msg)),
                "the region server's test MAC for that holder is not the witness's signature");
    }
}
