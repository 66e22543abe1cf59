package io.salus.hdfs.witness;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.HexFormat;

import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.NodeKeys;
import io.salus.core.crypto.SecretFiles;
import io.salus.core.crypto.SignatureScheme;

/**
 * The witness's own signing identity (for NO_NEXT_ENTRY). The 32-byte secret lives in a key file,
 * by default {@code <dir>/witness.key} (hex, mode 600), generated on first start.
 */
public final class WitnessIdentity {
  private WitnessIdentity() {
  }

  public static NodeKeys loadOrCreate(NodeId id, SignatureScheme scheme, Path keyFile)
      throws IOException {
    if (scheme == SignatureScheme.WEAK_CRC32C) {
      return NodeKeys.fromSecret(scheme, id, new byte[32]);
    }
    byte[] secret;
    if (Files.exists(keyFile)) {
      String hex = Files.readString(keyFile, StandardCharsets.UTF_8).strip();
      try {
        secret = HexFormat.of().parseHex(hex);
      } catch (IllegalArgumentException e) {
        throw new IOException("witness key file " + keyFile + " is not hex (" + e.getMessage()
            + "); delete it to generate a new key, then redistribute the verification key");
      }
      if (secret.length != 32) {
        throw new IOException("witness key file " + keyFile + " holds " + secret.length
            + " bytes, expected 32; delete it to generate a new key");
      }
    } else {
      secret = new byte[32];
      new SecureRandom().nextBytes(secret);
      SecretFiles.writeOwnerOnly(keyFile, (HexFormat.of().formatHex(secret) + "\n")
          .getBytes(StandardCharsets.UTF_8));
    }
    return NodeKeys.fromSecret(scheme, id, secret);
  }
}
