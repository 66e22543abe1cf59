package io.salus.blockdriver.launcher;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.salus.core.crypto.NodeId;
import io.salus.hdfs.witness.WitnessTrust;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The trust file and keys 'salus up' writes, read back by the witnesses' own parser (no cluster needed). */
class LauncherTrustTest {
  @TempDir Path tmp;

  @Test
  void trustFileNamesTheMastersRecoveryKeyAndKeepsItAcrossRestarts() throws Exception {
    Path file = LauncherTrust.ensure(tmp);
    WitnessTrust trust = WitnessTrust.load(file);
    NodeId master = NodeId.of(LauncherTrust.RECOVERER);
    assertTrue(trust.isRecoverer(master), "the trust file has a recoverer line:\n" + Files.readString(file));
    for (String r : LauncherTrust.REPLICAS) {
      assertFalse(trust.isRecoverer(NodeId.of(r)), "a replica is no recoverer: " + r);
    }
    byte[] key = LauncherTrust.recovererKeys(tmp).verificationKey();
    assertTrue(Files.readString(file).contains("recoverer master " + HexFormat.of().formatHex(key)),
        Files.readString(file));
    assertEquals("rw-------", PosixFilePermissions.toString(
        Files.getPosixFilePermissions(tmp.resolve("keys/master.key"))));
    // a restart re-writes the file from the same keys
    LauncherTrust.ensure(tmp);
    assertArrayEquals(key, LauncherTrust.recovererKeys(tmp).verificationKey());
    assertTrue(WitnessTrust.load(file).isRecoverer(master));
  }

  /**
   * Task tput20: the witnesses check the endpoint replicas' tentatives under the scheme the region servers sign
   * with ('salus up' sets salus.endpoint.signature-scheme.server to the servers' default; the trust file names it).
   */
  @Test
  void theWitnessesVerifyTheEndpointReplicasUnderTheServersScheme() throws Exception {
    WitnessTrust trust = WitnessTrust.load(LauncherTrust.ensure(tmp));
    NodeId r1 = NodeId.of("demo/0/r1");
    assertTrue(trust.members(new io.salus.core.cert.RegionId("demo", 0), 0).contains(r1));
    org.apache.hadoop.conf.Configuration conf = new org.apache.hadoop.conf.Configuration(false);
    SalusPlugins.configureHBase(conf, EndpointSeed.ensure(tmp));
    assertEquals(conf.get(io.salus.core.hbase.endpoint.EndpointKeyring.SERVER_SCHEME_KEY),
        trust.keys().schemeOf(r1).name());
    byte[] msg = {1, 2};
    assertTrue(trust.keys().verify(r1, msg, io.salus.core.crypto.NodeKeys.deterministic(trust.keys().schemeOf(r1),
        r1, EndpointSeed.ensure(tmp)).signer().sign(msg)));
  }

  @Test
  void endpointSeedIsDrawnOnceOwnerOnlyAndBadContentNamesTheFix() throws Exception {
    long seed = EndpointSeed.ensure(tmp);
    assertEquals(seed, EndpointSeed.ensure(tmp), "the seed is kept across restarts");
    Path f = tmp.resolve("keys").resolve(EndpointSeed.FILE);
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(f)));
    Files.writeString(f, "not-a-number\n");
    java.io.IOException e = org.junit.jupiter.api.Assertions.assertThrows(java.io.IOException.class,
        () -> EndpointSeed.ensure(tmp));
    assertTrue(e.getMessage().contains(f.toString()) && e.getMessage().contains("new --data directory"),
        e.getMessage());
  }
}
