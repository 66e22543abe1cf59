package io.salus.hdfs.witness;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.stream.Stream;

import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.NodeKeys;
import io.salus.core.crypto.SignatureScheme;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The witness key file: created owner-only and complete, reused on the next start. (That the mode
 * is set at creation rather than by a later chmod, and that it is fsynced, is visible only in the
 * code: {@link io.salus.core.crypto.SecretFiles#writeOwnerOnly} creates a temporary file with mode 600, fsyncs it
 * and renames it; no test can observe the old window deterministically.)
 */
class WitnessIdentityTest {
  @TempDir
  Path dir;

  @Test
  void keyFileIsOwnerOnlyCompleteAndStable() throws Exception {
    Path key = dir.resolve("sub").resolve("witness.key");
    NodeKeys first = WitnessIdentity.loadOrCreate(NodeId.of("w"), SignatureScheme.ED25519, key);
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(key)));
    assertEquals(65, Files.size(key), "64 hex digits and a newline");
    try (Stream<Path> s = Files.list(key.getParent())) {
      assertEquals(1, s.count(), "no temporary file may be left behind");
    }
    NodeKeys again = WitnessIdentity.loadOrCreate(NodeId.of("w"), SignatureScheme.ED25519, key);
    assertArrayEquals(first.verificationKey(), again.verificationKey());
  }
}
