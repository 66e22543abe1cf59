package io.salus.blockdriver.launcher;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;

/**
 * The seed of the replica endpoints' keyring in the embedded cluster ({@code salus.endpoint.keyring.test-seed}):
 * the only keyring the endpoint has today is the deterministic <b>test</b> keyring, so whoever knows this seed can
 * sign as any replica or as the volume's client. {@code salus up} draws it at random on first start, keeps it
 * owner-only in {@code DATA/keys/endpoint-test-seed}, and hands it to the region servers and to the client
 * configuration {@code DATA/conf/hbase-site.xml} (which a client needs to mount the Salus volume).
 */
final class EndpointSeed {
  static final String FILE = "endpoint-test-seed";

  private EndpointSeed() {
  }

  /** The recorded seed, drawn and recorded on first use. */
  static long ensure(Path dataDir) throws IOException {
    Path dir = dataDir.resolve(LauncherTrust.KEYS_DIR);
    Path file = dir.resolve(FILE);
    if (Files.exists(file)) {
      String s = Files.readString(file, StandardCharsets.UTF_8).strip();
      try {
        return Long.parseLong(s);
      } catch (NumberFormatException e) {
        throw new IOException(file + " does not hold a keyring seed (a decimal number) but '" + s
            + "'; restore it from a backup, or start a new --data directory (the volume's writes are signed"
            + " with keys from this seed)", e);
      }
    }
    Files.createDirectories(dir);
    long seed = new SecureRandom().nextLong();
    Path tmp = dir.resolve(FILE + ".tmp");
    Files.deleteIfExists(tmp);
    Files.createFile(tmp, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    Files.writeString(tmp, Long.toString(seed) + "\n", StandardCharsets.UTF_8);
    Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE);
    return seed;
  }
}
