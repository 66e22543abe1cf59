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
    Path file = LauncherTrust.ensure(tmp, LauncherKeyring.ensure(tmp));
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
    LauncherTrust.ensure(tmp, LauncherKeyring.ensure(tmp));
    assertArrayEquals(key, LauncherTrust.recovererKeys(tmp).verificationKey());
    assertTrue(WitnessTrust.load(file).isRecoverer(master));
  }

  /**
   * Task tput20: the witnesses check the endpoint replicas' tentatives under the scheme the region servers sign
   * with ('salus up' sets salus.endpoint.signature-scheme.server to the servers' default; the trust file names it),
   * with keys derived from the servers' production keyring (task key22), which another keyring's keys do not match.
   */
  @Test
  void theWitnessesVerifyTheEndpointReplicasUnderTheServersScheme() throws Exception {
    WitnessTrust trust = WitnessTrust.load(LauncherTrust.ensure(tmp, LauncherKeyring.ensure(tmp)));
    NodeId r1 = NodeId.of("demo/0/r1");
    assertTrue(trust.members(new io.salus.core.cert.RegionId("demo", 0), 0).contains(r1));
    org.apache.hadoop.conf.Configuration conf = new org.apache.hadoop.conf.Configuration(false);
    SalusPlugins.configureHBase(conf, LauncherKeyring.ensure(tmp));
    assertEquals(conf.get(io.salus.core.hbase.endpoint.EndpointKeyring.SERVER_SCHEME_KEY),
        trust.keys().schemeOf(r1).name());
    byte[] msg = {1, 2};
    io.salus.core.crypto.KeyringFile servers = io.salus.core.crypto.KeyringFile.load(
        Path.of(conf.get(io.salus.core.hbase.endpoint.EndpointKeyring.KEYRING_FILE_KEY)));
    assertTrue(trust.keys().verify(r1, msg, servers.serverKeys(trust.keys().schemeOf(r1), r1).signer().sign(msg)));
    io.salus.core.crypto.KeyringFile other = io.salus.core.crypto.KeyringFile.generate("*",
        new java.security.SecureRandom()).servers();
    assertFalse(trust.keys().verify(r1, msg, other.serverKeys(trust.keys().schemeOf(r1), r1).signer().sign(msg)),
        "another keyring's key for the same replica does not verify");
  }

  /** Task key22: 'salus up' writes a production keyring once, owner-only, the client's key only in the client's file. */
  @Test
  void keyringIsWrittenOnceOwnerOnlyAndTheServersFileHoldsNoClientSecret() throws Exception {
    LauncherKeyring k = LauncherKeyring.ensure(tmp);
    assertFalse(k.isTestKeyring());
    Path servers = tmp.resolve("keys/server.keyring");
    Path client = tmp.resolve("keys/client.keyring");
    String before = Files.readString(servers) + Files.readString(client);
    LauncherKeyring.ensure(tmp);
    assertEquals(before, Files.readString(servers) + Files.readString(client), "kept across restarts");
    for (Path p : new Path[] {servers, client}) {
      assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(p)), p.toString());
    }
    assertFalse(io.salus.core.crypto.KeyringFile.load(servers).holdsClientSecrets());
    assertTrue(io.salus.core.crypto.KeyringFile.load(client).holdsClientSecrets());
    org.apache.hadoop.conf.Configuration rs = new org.apache.hadoop.conf.Configuration(false);
    SalusPlugins.configureHBase(rs, k);
    org.apache.hadoop.conf.Configuration cl = new org.apache.hadoop.conf.Configuration(false);
    SalusPlugins.configureClient(cl, k);
    assertEquals(servers.toAbsolutePath().toString(),
        rs.get(io.salus.core.hbase.endpoint.EndpointKeyring.KEYRING_FILE_KEY));
    assertEquals(client.toAbsolutePath().toString(),
        cl.get(io.salus.core.hbase.endpoint.EndpointKeyring.CLIENT_KEYRING_FILE_KEY));
    assertEquals(null, rs.get(io.salus.core.hbase.endpoint.EndpointKeyring.TEST_SEED_KEY));
    assertEquals(null, cl.get(io.salus.core.hbase.endpoint.EndpointKeyring.TEST_SEED_KEY));
    assertEquals(null, rs.get(io.salus.core.hbase.endpoint.EndpointKeyring.CLIENT_KEYRING_FILE_KEY),
        "the region servers' configuration does not name the client's file");
    // one file lost: refused with the fix, not silently replaced by a new keyring
    Files.delete(client);
    java.io.IOException e = org.junit.jupiter.api.Assertions.assertThrows(java.io.IOException.class,
        () -> LauncherKeyring.ensure(tmp));
    assertTrue(e.getMessage().contains("incomplete") && e.getMessage().contains("new --data directory"),
        e.getMessage());
  }

  /** A data directory made before the production keyring keeps its test seed (its certificates are signed so). */
  @Test
  void aDataDirectoryWithTheOldTestSeedKeepsItAndBadContentNamesTheFix() throws Exception {
    Path f = tmp.resolve("keys").resolve(LauncherKeyring.LEGACY_SEED_FILE);
    Files.createDirectories(f.getParent());
    Files.writeString(f, "123\n");
    LauncherKeyring k = LauncherKeyring.ensure(tmp);
    assertTrue(k.isTestKeyring());
    assertTrue(k.trustLine().startsWith("endpoint-volume * test-seed 123 "), k.trustLine());
    assertFalse(Files.exists(tmp.resolve("keys/server.keyring")), "no production keyring beside the old seed");
    Files.writeString(f, "not-a-number\n");
    java.io.IOException e = org.junit.jupiter.api.Assertions.assertThrows(java.io.IOException.class,
        () -> LauncherKeyring.ensure(tmp));
    assertTrue(e.getMessage().contains(f.toString()) && e.getMessage().contains("new --data directory"),
        e.getMessage());
  }
}
