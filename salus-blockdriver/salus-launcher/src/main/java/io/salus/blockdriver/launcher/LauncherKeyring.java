package io.salus.blockdriver.launcher;

import io.salus.blockdriver.cli.KeysCommand;
import io.salus.core.crypto.KeyringFile;
import io.salus.core.crypto.SignatureScheme;
import io.salus.core.hbase.endpoint.EndpointKeyring;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.Locale;
import org.apache.hadoop.conf.Configuration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The keys the embedded cluster's replica endpoints and the Salus volume's client sign with. On first start
 * {@code salus up} writes a production keyring ({@link KeyringFile}, as {@code salus keys init} does) to
 * {@code DATA/keys/server.keyring} (the region servers' and witnesses': servers' secret, client public key) and
 * {@code DATA/keys/client.keyring} (the client's: servers' secret, client private key), both owner-only, and reuses
 * them on every later start.
 *
 * <p>A data directory made before the production keyring ({@code DATA/keys/endpoint-test-seed}, no
 * {@code server.keyring}) keeps its deterministic test keyring, with a warning: its Salus logs, checkpoints and
 * witness certificates are signed with those keys, so switching would make every recovery refuse them. Start a new
 * {@code --data} directory to get production keys.
 */
final class LauncherKeyring {
  private static final Logger LOG = LoggerFactory.getLogger(LauncherKeyring.class);
  /** The test keyring's seed file of data directories made before the production keyring. */
  static final String LEGACY_SEED_FILE = "endpoint-test-seed";

  private final Path serverFile;
  private final Path clientFile;
  private final Long legacySeed;

  private LauncherKeyring(Path serverFile, Path clientFile, Long legacySeed) {
    this.serverFile = serverFile;
    this.clientFile = clientFile;
    this.legacySeed = legacySeed;
  }

  /** The data directory's keyring, written on first use. */
  static LauncherKeyring ensure(Path dataDir) throws IOException {
    Path dir = dataDir.resolve(LauncherTrust.KEYS_DIR).toAbsolutePath();
    Path servers = dir.resolve(KeysCommand.SERVER_FILE);
    Path client = dir.resolve(KeysCommand.CLIENT_FILE);
    Path legacy = dir.resolve(LEGACY_SEED_FILE);
    if (!Files.exists(servers) && Files.exists(legacy)) {
      String s = Files.readString(legacy, StandardCharsets.UTF_8).strip();
      try {
        long seed = Long.parseLong(s);
        LOG.warn("{}: this data directory was made with the deterministic TEST keyring (anyone who knows the seed"
            + " signs as any node, the client included); it keeps it, because its logs and certificates are signed"
            + " with it. Start a new --data directory for production keys", legacy);
        return new LauncherKeyring(null, null, seed);
      } catch (NumberFormatException e) {
        throw new IOException(legacy + " does not hold a keyring seed (a decimal number) but '" + s
            + "'; restore it from a backup, or start a new --data directory (the volume's writes are signed"
            + " with keys from this seed)", e);
      }
    }
    if (!Files.exists(servers) || !Files.exists(client)) {
      if (Files.exists(servers) || Files.exists(client)) {
        throw new IOException("only one of " + servers + " and " + client + " exists: the keyring is incomplete;"
            + " restore the missing file from a backup, or start a new --data directory");
      }
      KeyringFile.Pair pair = KeyringFile.generate(KeyringFile.ALL_VOLUMES, new SecureRandom());
      pair.servers().write(servers);
      pair.client().write(client);
    }
    KeyringFile.load(servers); // errors (permissions, content) name the file and the fix now, not at a region open
    KeyringFile.load(client);
    return new LauncherKeyring(servers, client, null);
  }

  /** True if this data directory still uses the deterministic test keyring. */
  boolean isTestKeyring() {
    return legacySeed != null;
  }

  /** The region servers' keys (their hbase-site.xml). */
  void configureServers(Configuration conf) {
    if (legacySeed != null) {
      conf.setLong(EndpointKeyring.TEST_SEED_KEY, legacySeed);
    } else {
      conf.set(EndpointKeyring.KEYRING_FILE_KEY, serverFile.toString());
    }
  }

  /** The client's keys (the hbase-site.xml a client mounts the Salus volume with). */
  void configureClient(Configuration conf) {
    if (legacySeed != null) {
      conf.setLong(EndpointKeyring.TEST_SEED_KEY, legacySeed);
    } else {
      conf.set(EndpointKeyring.CLIENT_KEYRING_FILE_KEY, clientFile.toString());
    }
  }

  /** The witness trust-file line for the replica endpoints of every Salus volume. */
  String trustLine() {
    String scheme = " server-scheme " + SignatureScheme.DEFAULT_SERVER.name().toLowerCase(Locale.ROOT);
    return legacySeed != null ? "endpoint-volume * test-seed " + legacySeed + scheme
        : "endpoint-volume * keyring " + serverFile + scheme;
  }
}
