package io.salus.core.hbase.endpoint;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import io.salus.core.cert.Statement;
import io.salus.core.crypto.KeyringFile;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.NodeKeys;
import io.salus.core.crypto.SignatureScheme;
import io.salus.core.hbase.VolumeGeometry;
import io.salus.core.merkle.Hash;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The production keyring (task key22, issue 13): servers and client load different files; a region server can verify
 * the client's writes but never sign one, the client cannot sign as a server, keys of another keyring (an outsider's
 * or a stale one) do not verify, and every misconfiguration is refused with an error naming the file and the fix.
 */
class ProductionKeyringTest {
    @TempDir Path tmp;
    final VolumeAddressing a = new VolumeAddressing(new VolumeGeometry("v", 2 * 16 * 4096, 4096, 16));
    final byte[] msg = {1, 2, 3, 4};

    private Configuration files(KeyringFile.Pair pair) throws IOException {
        pair.servers().write(tmp.resolve("server.keyring"));
        pair.client().write(tmp.resolve("client.keyring"));
        Configuration c = new Configuration(false);
        c.set(EndpointKeyring.KEYRING_FILE_KEY, tmp.resolve("server.keyring").toString());
        c.set(EndpointKeyring.CLIENT_KEYRING_FILE_KEY, tmp.resolve("client.keyring").toString());
        return c;
    }

    private static Certificate tentative(EndpointKeyring k, NodeId signer) {
        return Certificate.sign(CertType.TENTATIVE_LOG_ENTRY,
                new Statement.LogEntry(new RegionId("v", 0), 0, 3, Hash.of(new byte[32]), 4096), k.signer(signer));
    }

    @Test
    void serversVerifyTheClientButCannotSignAsItAndTheClientCannotSignAsAServer() throws Exception {
        Configuration c = files(KeyringFile.generate("*", new SecureRandom()));
        EndpointKeyring server = EndpointKeyring.fromConfiguration(c, a);
        EndpointKeyring client = EndpointKeyring.forClient(c, a);
        NodeId r01 = a.replica(0, 1);
        // the client's signature verifies at the servers (Ed25519), a replica's at the client and at its peers
        assertTrue(server.verifier().verify(a.client(), msg, 0, msg.length,
                client.signer(a.client()).sign(msg, 0, msg.length)));
        assertTrue(client.verifier().verify(r01, msg, 0, msg.length, server.signer(r01).sign(msg, 0, msg.length)));
        assertEquals(SignatureScheme.ED25519, server.verifier().schemeOf(a.client()));
        assertEquals(SignatureScheme.HMAC_SHA256, server.verifier().schemeOf(r01));
        // roles: no signing key for the other side
        assertThrows(IllegalArgumentException.class, () -> server.signer(a.client()));
        assertThrows(IllegalArgumentException.class, () -> client.signer(r01));
        // every server node has its own key (a replica's MAC does not pass for its peer's)
        byte[] sig = server.signer(r01).sign(msg, 0, msg.length);
        assertFalse(server.verifier().verify(a.replica(0, 2), msg, 0, msg.length, sig));
        Certificate t = tentative(server, r01);
        assertTrue(t.verify(server.verifier(), Set.of(r01)));
    }

    @Test
    void keysOfAnotherKeyringDoNotVerify() throws Exception {
        Configuration c = files(KeyringFile.generate("*", new SecureRandom()));
        EndpointKeyring server = EndpointKeyring.fromConfiguration(c, a);
        // an outsider (or a stale keyring) with its own files: neither its client nor its replicas verify here
        Path other = tmp.resolve("other");
        KeyringFile.Pair o = KeyringFile.generate("*", new SecureRandom());
        o.servers().write(other.resolve("server.keyring"));
        o.client().write(other.resolve("client.keyring"));
        Configuration oc = new Configuration(false);
        oc.set(EndpointKeyring.KEYRING_FILE_KEY, other.resolve("server.keyring").toString());
        oc.set(EndpointKeyring.CLIENT_KEYRING_FILE_KEY, other.resolve("client.keyring").toString());
        EndpointKeyring foreignServer = EndpointKeyring.fromConfiguration(oc, a);
        EndpointKeyring foreignClient = EndpointKeyring.forClient(oc, a);
        assertFalse(server.verifier().verify(a.client(), msg, 0, msg.length,
                foreignClient.signer(a.client()).sign(msg, 0, msg.length)));
        NodeId r00 = a.replica(0, 0);
        assertFalse(tentative(foreignServer, r00).verify(server.verifier(), Set.of(r00)));
        // nor do the deterministic test keys for any seed: the production keyring is not derived from one
        EndpointKeyring test = EndpointKeyring.deterministic(SignatureScheme.ED25519, SignatureScheme.HMAC_SHA256, 0,
                a);
        assertFalse(server.verifier().verify(a.client(), msg, 0, msg.length,
                test.signer(a.client()).sign(msg, 0, msg.length)));
        assertFalse(tentative(test, r00).verify(server.verifier(), Set.of(r00)));
    }

    @Test
    void aVolumesOwnClientLineWinsOverTheStarLine() throws Exception {
        KeyringFile.Pair all = KeyringFile.generate("*", new SecureRandom());
        KeyringFile.Pair mine = KeyringFile.generate("v", new SecureRandom());
        Path s = tmp.resolve("s.keyring");
        Files.writeString(s, "server-secret " + "00".repeat(32) + "\n" + clientLine(all, "*") + clientLine(mine, "v"));
        Files.setPosixFilePermissions(s, PosixFilePermissions.fromString("rw-------"));
        KeyringFile kf = KeyringFile.load(s);
        assertArrayEquals(mine.servers().clientPublicKey("v"), kf.clientPublicKey("v"));
        assertArrayEquals(all.servers().clientPublicKey("*"), kf.clientPublicKey("other"));
    }

    private static String clientLine(KeyringFile.Pair p, String volume) {
        return "client-public " + volume + " " + java.util.HexFormat.of().formatHex(p.servers().clientPublicKey(volume))
                + "\n";
    }

    @Test
    void misconfigurationsAreRefusedNamingTheFix() throws Exception {
        Configuration c = files(KeyringFile.generate("*", new SecureRandom()));
        // the client's file on a region server: it could sign as the client
        Configuration swapped = new Configuration(false);
        swapped.set(EndpointKeyring.KEYRING_FILE_KEY, c.get(EndpointKeyring.CLIENT_KEYRING_FILE_KEY));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> EndpointKeyring.fromConfiguration(swapped, a));
        assertTrue(e.getMessage().contains("client's private key") && e.getMessage().contains("server.keyring"),
                e.getMessage());
        // the servers' file on the client: no signing key
        Configuration swapped2 = new Configuration(false);
        swapped2.set(EndpointKeyring.CLIENT_KEYRING_FILE_KEY, c.get(EndpointKeyring.KEYRING_FILE_KEY));
        e = assertThrows(IllegalArgumentException.class, () -> EndpointKeyring.forClient(swapped2, a));
        assertTrue(e.getMessage().contains("no client-secret line") && e.getMessage().contains("client.keyring"),
                e.getMessage());
        // both the file and the test seed
        Configuration both = new Configuration(c);
        both.setLong(EndpointKeyring.TEST_SEED_KEY, 5);
        e = assertThrows(IllegalArgumentException.class, () -> EndpointKeyring.fromConfiguration(both, a));
        assertTrue(e.getMessage().contains("unset " + EndpointKeyring.TEST_SEED_KEY), e.getMessage());
        // neither
        e = assertThrows(IllegalArgumentException.class,
                () -> EndpointKeyring.fromConfiguration(new Configuration(false), a));
        assertTrue(e.getMessage().contains(EndpointKeyring.KEYRING_FILE_KEY) && e.getMessage().contains("salus keys init"),
                e.getMessage());
        // a client scheme other than Ed25519 with a keyring file
        Configuration hmac = new Configuration(c);
        hmac.set(EndpointKeyring.SCHEME_KEY, "HMAC_SHA256");
        e = assertThrows(IllegalArgumentException.class, () -> EndpointKeyring.fromConfiguration(hmac, a));
        assertTrue(e.getMessage().contains("Ed25519"), e.getMessage());
        // a servers' file without a client key for the volume
        Path noClient = tmp.resolve("noclient.keyring");
        Files.writeString(noClient, "server-secret " + "11".repeat(32) + "\n");
        Files.setPosixFilePermissions(noClient, PosixFilePermissions.fromString("rw-------"));
        Configuration nc = new Configuration(false);
        nc.set(EndpointKeyring.KEYRING_FILE_KEY, noClient.toString());
        e = assertThrows(IllegalArgumentException.class, () -> EndpointKeyring.fromConfiguration(nc, a));
        assertTrue(e.getMessage().contains("no client-public line for volume v"), e.getMessage());
    }

    @Test
    void theFileIsCheckedPermissionsSyntaxAndPairs() throws Exception {
        Path f = tmp.resolve("k.keyring");
        KeyringFile.generate("*", new SecureRandom()).servers().write(f);
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(f)));
        IOException e = assertThrows(IOException.class,
                () -> KeyringFile.generate("*", new SecureRandom()).servers().write(f));
        assertTrue(e.getMessage().contains("exists"), e.getMessage());
        Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("rw-r--r--"));
        e = assertThrows(IOException.class, () -> KeyringFile.load(f));
        assertTrue(e.getMessage().contains("chmod 600 " + f), e.getMessage());
        Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("rw-------"));
        KeyringFile.load(f);
        for (String[] bad : new String[][] {
                {"server-secret abc\n", ":1: server-secret is not hex"},
                {"server-secret " + "00".repeat(31) + "\n", "must be 32 bytes"},
                {"client-public v " + "00".repeat(32) + "\n", "no `server-secret` line"},
                {"serversecret x\n", "unknown directive"},
                {"server-secret " + "00".repeat(32) + "\nclient-secret v " + "01".repeat(32) + "\nclient-public v "
                        + "02".repeat(32) + "\n", "not one key pair"},
        }) {
            Files.writeString(f, bad[0]);
            e = assertThrows(IOException.class, () -> KeyringFile.load(f), bad[0]);
            assertTrue(e.getMessage().contains(bad[1]), e.getMessage());
        }
        e = assertThrows(IOException.class, () -> KeyringFile.load(tmp.resolve("missing")));
        assertTrue(e.getMessage().contains("salus keys init"), e.getMessage());
    }

    @Test
    void serverKeysAreDerivedPerNodeAndScheme() {
        KeyringFile k = KeyringFile.generate("*", new SecureRandom()).servers();
        NodeKeys x = k.serverKeys(SignatureScheme.HMAC_SHA256, NodeId.of("v/0/r0"));
        NodeKeys y = k.serverKeys(SignatureScheme.HMAC_SHA256, NodeId.of("v/0/r1"));
        assertFalse(java.util.Arrays.equals(x.verificationKey(), y.verificationKey()));
        assertArrayEquals(x.verificationKey(), k.serverKeys(SignatureScheme.HMAC_SHA256, NodeId.of("v/0/r0"))
                .verificationKey(), "deterministic from the file");
        assertEquals(32, k.serverKeys(SignatureScheme.ED25519, NodeId.of("v/0/r0")).verificationKey().length);
    }
}
