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
