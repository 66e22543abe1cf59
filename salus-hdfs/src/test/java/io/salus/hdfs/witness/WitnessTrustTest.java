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
