package io.salus.hdfs.witness;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;

import io.salus.core.cert.RegionId;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.NodeKeys;
import io.salus.core.crypto.SignatureScheme;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class WitnessTrustTest {
  @TempDir
  Path tmp;

  private Path file(String text) throws IOException {
    Path p = Files.createTempFile(tmp, "trust", ".conf");
    Files.writeString(p, text);
    return p;
  }

  @Test
  void rulesAreMostSpecificFirstAndGenerationAwareMembershipWins() throws Exception {
    NodeKeys k = NodeKeys.deterministic(SignatureScheme.ED25519, NodeId.of("a"), 3);
    String hex = java.util.HexFormat.of().formatHex(k.verificationKey());
    WitnessTrust t = WitnessTrust.load(file("# test\nscheme ed25519\nnode a " + hex + "\n"
        + "rrs vol#2 a b c\nrrs vol#* d e f\nrrs * g h i\n"));
    assertEquals(SignatureScheme.ED25519, t.scheme());
    assertTrue(t.keys().knows(NodeId.of("a")));
    assertEquals(ids("a", "b", "c"), t.members(new RegionId("vol", 2)));
    assertEquals(ids("d", "e", "f"), t.members(new RegionId("vol", 3)));
    assertEquals(ids("g", "h", "i"), t.members(new RegionId("other", 0)));
    t.useMembership((r, g) -> g == 7 ? ids("x", "y", "z") : null);
    assertEquals(ids("x", "y", "z"), t.members(new RegionId("vol", 2), 7));
    assertEquals(ids("a", "b", "c"), t.members(new RegionId("vol", 2), 6));
    assertNull(new WitnessTrust(SignatureScheme.WEAK_CRC32C).members(new RegionId("v", 0), 0));
  }

  @Test
  void aRecovererLineTrustsTheMastersKeyForSealingQueriesOnly() throws Exception {
    NodeKeys m = NodeKeys.deterministic(SignatureScheme.ED25519, NodeId.of("master"), 5);
    String hex = java.util.HexFormat.of().formatHex(m.verificationKey());
    WitnessTrust t = WitnessTrust.load(file("recoverer master " + hex + "\nrrs * a b c\n"));
    assertTrue(t.isRecoverer(NodeId.of("master")));
    assertTrue(!t.isRecoverer(NodeId.of("a")));
    RecoveryQuery q = new RecoveryQuery(new RegionId("vol", 0), 3, 9, 4);
    assertNull(q.checkSignature(m.id(), q.sign(m.signer()), t.keys()));
    IOException e = assertThrows(IOException.class,
        () -> WitnessTrust.load(file("recoverer master\n")));
    assertTrue(e.getMessage().contains(":1:") && e.getMessage().contains("key"), e.getMessage());
    e = assertThrows(IOException.class, () -> WitnessTrust.load(file("scheme weak\nnode a\nrecoverer a\n")));
    assertTrue(e.getMessage().contains("both"), e.getMessage());
  }

  /**
   * Issue 13: the test-only `endpoint-volume` line lets witnesses check the HBase replica endpoint's
   * tentatives: region i of the volume has members {@code <vol>/<i>/r0..r2} (VolumeAddressing's
   * naming) with the endpoint's deterministic test keys; other volumes and generations stay unknown.
   */
  @Test
  void anEndpointVolumeLineDerivesTheMembersAndTestKeysOfEveryRegion() throws Exception {
    WitnessTrust t = WitnessTrust.load(file("scheme ed25519\nendpoint-volume vv test-seed 5 server-scheme ed25519\n"));
    io.salus.core.cert.RegionId r2 = new io.salus.core.cert.RegionId("vv", 2);
    java.util.Set<io.salus.core.crypto.NodeId> m = t.members(r2, 0);
    assertEquals(Set.of(NodeId.of("vv/2/r0"), NodeId.of("vv/2/r1"), NodeId.of("vv/2/r2")), m);
    io.salus.core.crypto.NodeId r0 = io.salus.core.crypto.NodeId.of("vv/2/r0");
    byte[] msg = {1, 2, 3};
    assertTrue(t.keys().verify(r0, msg, io.salus.core.crypto.NodeKeys.deterministic(SignatureScheme.ED25519, r0, 5)
        .signer().sign(msg)), "the endpoint's test key of vv/2/r0 verifies");
    assertTrue(!t.keys().verify(r0, msg, io.salus.core.crypto.NodeKeys.deterministic(SignatureScheme.ED25519, r0, 6)
        .signer().sign(msg)), "another seed's key does not");
    assertEquals(null, t.members(r2, 1), "generation 1 is not the endpoint's static configuration");
    assertEquals(null, t.members(new io.salus.core.cert.RegionId("other", 0), 0));
    IOException e = assertThrows(IOException.class,
        () -> WitnessTrust.load(file("endpoint-volume vv seed 5\n")));
    assertTrue(e.getMessage().contains("endpoint-volume <volume> test-seed <long>"), e.getMessage());
  }

  /**
   * Task key22: `endpoint-volume * keyring <path>` derives the endpoint replicas' keys from the region servers'
   * production keyring (a relative path from the trust file's directory); another keyring's keys do not verify, and
   * a missing or group-readable keyring is refused naming the file.
   */
  @Test
  void anEndpointVolumeKeyringLineDerivesTheKeysFromTheServersKeyring() throws Exception {
    io.salus.core.crypto.KeyringFile servers = io.salus.core.crypto.KeyringFile.generate("*",
        new java.security.SecureRandom()).servers();
    Path kf = file("x").resolveSibling("server.keyring");
    servers.write(kf);
    WitnessTrust t = WitnessTrust.load(file("endpoint-volume * keyring server.keyring\n"));
    NodeId r = NodeId.of("vol/1/r2");
    assertEquals(Set.of(NodeId.of("vol/1/r0"), NodeId.of("vol/1/r1"), r),
        t.members(new io.salus.core.cert.RegionId("vol", 1), 0));
    byte[] msg = {9, 8};
    assertEquals(SignatureScheme.HMAC_SHA256, t.keys().schemeOf(r), "the servers' default scheme");
    assertTrue(t.keys().verify(r, msg, servers.serverKeys(SignatureScheme.HMAC_SHA256, r).signer().sign(msg)));
    io.salus.core.crypto.KeyringFile other = io.salus.core.crypto.KeyringFile.generate("*",
        new java.security.SecureRandom()).servers();
    assertTrue(!t.keys().verify(r, msg, other.serverKeys(SignatureScheme.HMAC_SHA256, r).signer().sign(msg)),
        "another keyring's key for the same replica does not verify");
    IOException e = assertThrows(IOException.class,
        () -> WitnessTrust.load(file("endpoint-volume * keyring missing.keyring\n")));
    assertTrue(e.getMessage().contains("missing.keyring") && e.getMessage().contains(":1:"), e.getMessage());
    java.nio.file.Files.setPosixFilePermissions(kf, java.nio.file.attribute.PosixFilePermissions.fromString(
        "rw-r-----"));
    e = assertThrows(IOException.class, () -> WitnessTrust.load(file("endpoint-volume * keyring server.keyring\n")));
    assertTrue(e.getMessage().contains("chmod 600"), e.getMessage());
  }

  /** `endpoint-volume * test-seed S` ('salus up'): every volume's regions, with a named volume's own line first. */
  @Test
  void anEndpointVolumeStarLineCoversEveryVolume() throws Exception {
    WitnessTrust t = WitnessTrust.load(file("scheme ed25519\nendpoint-volume * test-seed 7\n"
        + "endpoint-volume vv test-seed 5\n"));
    NodeId a = NodeId.of("any/3/r1");
    assertEquals(Set.of(NodeId.of("any/3/r0"), a, NodeId.of("any/3/r2")),
        t.members(new io.salus.core.cert.RegionId("any", 3), 0));
    byte[] msg = {4, 5};
    assertTrue(t.keys().verify(a, msg, io.salus.core.crypto.NodeKeys.deterministic(SignatureScheme.HMAC_SHA256, a, 7)
        .signer().sign(msg)), "the * line's seed gives any/3/r1's key (the servers' default scheme, hmac)");
    NodeId v = NodeId.of("vv/0/r0");
    assertEquals(3, t.members(new io.salus.core.cert.RegionId("vv", 0), 0).size());
    assertTrue(t.keys().verify(v, msg, io.salus.core.crypto.NodeKeys.deterministic(SignatureScheme.HMAC_SHA256, v, 5)
        .signer().sign(msg)), "a volume's own line wins over *");
    assertEquals(null, t.members(new io.salus.core.cert.RegionId("any", 3), 1), "generation 0 only");
  }

  /**
   * Task tput20: each node has its own scheme (a `node` line's `scheme`, an `endpoint-volume` line's
   * `server-scheme`, default hmac as the endpoint's servers); a signature or certificate under another scheme than
   * its signer's is refused, whatever scheme it claims.
   */
  @Test
  void eachNodeVerifiesOnlyUnderItsOwnScheme() throws Exception {
    NodeId a = NodeId.of("a");
    NodeId b = NodeId.of("b");
    NodeKeys aEd = NodeKeys.deterministic(SignatureScheme.ED25519, a, 3);
    NodeKeys bMac = NodeKeys.deterministic(SignatureScheme.HMAC_SHA256, b, 3);
    java.util.HexFormat hex = java.util.HexFormat.of();
    WitnessTrust t = WitnessTrust.load(file("scheme ed25519\nnode a " + hex.formatHex(aEd.verificationKey()) + "\n"
        + "node b " + hex.formatHex(bMac.verificationKey()) + " scheme hmac\n"
        + "endpoint-volume vv test-seed 5\n"));
    assertEquals(SignatureScheme.ED25519, t.keys().schemeOf(a));
    assertEquals(SignatureScheme.HMAC_SHA256, t.keys().schemeOf(b));
    byte[] msg = {7, 7};
    assertTrue(t.keys().verify(a, msg, aEd.signer().sign(msg)));
    assertTrue(t.keys().verify(b, msg, bMac.signer().sign(msg)));
    // b's secret as an Ed25519 seed, and a weak signature anybody can compute: not b's scheme
    assertTrue(!t.keys().verify(b, msg, NodeKeys.deterministic(SignatureScheme.ED25519, b, 3).signer().sign(msg)));
    assertTrue(!t.keys().verify(b, msg, NodeKeys.deterministic(SignatureScheme.WEAK_CRC32C, b, 3).signer().sign(msg)));
    // the endpoint's replicas: hmac by default; their tentatives under another scheme are refused
    RegionId r = new RegionId("vv", 1);
    Set<NodeId> m = t.members(r, 0);
    NodeId r0 = NodeId.of("vv/1/r0");
    assertEquals(SignatureScheme.HMAC_SHA256, t.keys().schemeOf(r0));
    io.salus.core.cert.Statement st = new io.salus.core.cert.Statement.LogEntry(r, 0, 2,
        io.salus.core.merkle.HashAlgorithm.SHA256.hash(new byte[] {1}), 4);
    for (SignatureScheme s : SignatureScheme.values()) {
      io.salus.core.cert.Certificate c = io.salus.core.cert.Certificate.sign(
          io.salus.core.cert.CertType.TENTATIVE_LOG_ENTRY, st, NodeKeys.deterministic(s, r0, 5).signer());
      assertEquals(s == SignatureScheme.HMAC_SHA256, io.salus.core.cert.Certificate.decode(c.encode())
          .verify(t.keys(), m), s + " tentative of " + r0);
    }
    IOException e = assertThrows(IOException.class,
        () -> WitnessTrust.load(file("endpoint-volume vv test-seed 5 server-scheme rot13\n")));
    assertTrue(e.getMessage().contains("rot13"), e.getMessage());
    e = assertThrows(IOException.class, () -> WitnessTrust.load(file("node b scheme hmac\n")));
    assertTrue(e.getMessage().contains("needs the node's verification key"), e.getMessage());
  }

  @Test
  void badFilesNameTheLineAndTheFix() throws Exception {
    IOException e = assertThrows(IOException.class,
        () -> WitnessTrust.load(file("node a\n")));
    assertTrue(e.getMessage().contains(":1:") && e.getMessage().contains("scheme"), e.getMessage());
    e = assertThrows(IOException.class,
        () -> WitnessTrust.load(file("scheme hmac\nnode a\n")));
    assertTrue(e.getMessage().contains(":2:") && e.getMessage().contains("key"), e.getMessage());
    e = assertThrows(IOException.class,
        () -> WitnessTrust.load(file("scheme weak\nrrs * a a b\n")));
    assertTrue(e.getMessage().contains("distinct"), e.getMessage());
    e = assertThrows(IOException.class,
        () -> WitnessTrust.load(file("scheme weak\nfoo bar\n")));
    assertTrue(e.getMessage().contains("unknown directive"), e.getMessage());
    e = assertThrows(IOException.class,
        () -> WitnessTrust.load(file("rrs * a b c\nscheme weak\n")));
    assertTrue(e.getMessage().contains(":2:") && e.getMessage().contains("before"), e.getMessage());
  }

  @Test
  void ed25519IsTheDefaultSchemeOfTrustFilesAndWitnesses() throws Exception {
    assertEquals(SignatureScheme.ED25519, WitnessTrust.load(file("# empty\n")).scheme());
    NodeKeys k = NodeKeys.deterministic(SignatureScheme.ED25519, NodeId.of("a"), 3);
    WitnessTrust t = WitnessTrust.load(file("node a "
        + java.util.HexFormat.of().formatHex(k.verificationKey()) + "\nrrs * a b c\n"));
    assertEquals(SignatureScheme.ED25519, t.scheme());
    try (WitnessNode w = WitnessDaemon.start(WitnessNode.Settings.of(tmp.resolve("w"), 0))) {
      assertEquals(SignatureScheme.ED25519, w.service().keys().scheme(),
          "a witness started without a trust file signs with ed25519");
    }
  }

  private static Set<NodeId> ids(String... s) {
    java.util.Set<NodeId> r = new java.util.HashSet<>();
    for (String x : s) {
      r.add(NodeId.of(x));
    }
    return r;
  }
}
