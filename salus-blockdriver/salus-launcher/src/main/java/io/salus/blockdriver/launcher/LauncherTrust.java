package io.salus.blockdriver.launcher;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.HexFormat;
import java.util.List;

import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.NodeKeys;
import io.salus.core.crypto.SignatureScheme;
import io.salus.hdfs.witness.WitnessIdentity;

/**
 * The replica identities of the embedded cluster and the trust file its five witnesses load, so
 * that they accept offers signed by the cluster's replicas (without one, a witness knows no RRS
 * and rejects every offer). Ed25519: each replica's secret stays in {@code DATA/keys/<id>.key}
 * (owner-only), the trust file {@code DATA/witness-trust.conf} holds only verification keys, the
 * {@code recoverer master} line (the Master's recovery key, {@code DATA/keys/master.key}), one
 * {@code rrs *} line naming the three replicas, and {@code endpoint-volume * keyring DATA/keys/server.keyring}: the replica
 * endpoints of every Salus volume (members {@code <volume>/<i>/r<k>}, keys derived from that keyring, {@link LauncherKeyring}),
 * whose tentatives the five witnesses store (they sign with the servers' scheme, HMAC-SHA256 by default, named on the
 * line). Created on first start, re-written at every start.
 */
public final class LauncherTrust {
  /** The three replica ids of every region's RRS in the embedded cluster. */
  public static final List<String> REPLICAS = List.of("replica-1", "replica-2", "replica-3");
  public static final String TRUST_FILE = "witness-trust.conf";
  public static final String KEYS_DIR = "keys";
  /** The id of the HBase Master's recovery key: the trust file's {@code recoverer} (docs/hdfs.md). */
  public static final String RECOVERER = "master";

  private LauncherTrust() {
  }

  /** The replica's signing keys (its secret file under {@code DATA/keys}), created if absent. */
  public static NodeKeys replicaKeys(Path dataDir, String replica) throws IOException {
    return WitnessIdentity.loadOrCreate(NodeId.of(replica), SignatureScheme.ED25519,
        dataDir.resolve(KEYS_DIR).resolve(replica + ".key"));
  }

  /**
   * The Master's recovery key (its secret in {@code DATA/keys/master.key}), created if absent: the only key whose
   * signed QUERY may seal a witness slot (NO_NEXT_ENTRY), so that nobody else can stall a region.
   */
  public static NodeKeys recovererKeys(Path dataDir) throws IOException {
    return WitnessIdentity.loadOrCreate(NodeId.of(RECOVERER), SignatureScheme.ED25519,
        dataDir.resolve(KEYS_DIR).resolve(RECOVERER + ".key"));
  }

  /**
   * Creates (or re-writes from the existing keys) the witness trust file and returns its path; {@code keyring} is the
   * data directory's ({@link LauncherKeyring#ensure}), whose line the file gets.
   */
  static Path ensure(Path dataDir, LauncherKeyring keyring) throws IOException {
    StringBuilder t = new StringBuilder()
        .append("# written by 'salus up': the embedded cluster's replicas (secrets in ")
        .append(KEYS_DIR).append("/)\nscheme ed25519\n");
    for (String r : REPLICAS) {
      t.append("node ").append(r).append(' ')
          .append(HexFormat.of().formatHex(replicaKeys(dataDir, r).verificationKey())).append('\n');
    }
    t.append("recoverer ").append(RECOVERER).append(' ')
        .append(HexFormat.of().formatHex(recovererKeys(dataDir).verificationKey())).append('\n');
    t.append("rrs * ").append(String.join(" ", REPLICAS)).append('\n');
    // the replica endpoints of every Salus volume sign with keys derived from DATA/keys/server.keyring
    // (LauncherKeyring); their regions' members are <volume>/<i>/r<k>
    t.append(keyring.trustLine()).append('\n');
    Path file = dataDir.resolve(TRUST_FILE);
    Path tmp = dataDir.resolve(TRUST_FILE + ".tmp");
    Files.writeString(tmp, t, StandardCharsets.UTF_8);
    Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    return file;
  }
}
