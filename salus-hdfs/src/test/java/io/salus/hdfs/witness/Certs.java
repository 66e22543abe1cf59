package io.salus.hdfs.witness;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import io.salus.core.cert.Statement;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.NodeKeys;
import io.salus.core.crypto.SignatureScheme;
import io.salus.core.merkle.Hash;

/** Test helper: real salus-core certificates signed by three replica keys. */
final class Certs {
  final SignatureScheme scheme;
  final List<NodeKeys> replicas = new ArrayList<>();
  /** The Master's recovery key: a trust-file `recoverer` whose signed queries may seal. */
  final NodeKeys master;

  Certs(SignatureScheme scheme) {
    this.scheme = scheme;
    for (int i = 0; i < 3; i++) {
      replicas.add(NodeKeys.deterministic(scheme, NodeId.of("rs" + i), 42));
    }
    master = NodeKeys.deterministic(scheme, NodeId.of("master"), 7);
  }

  WitnessTrust trust() {
    WitnessTrust t = new WitnessTrust(scheme);
    for (NodeKeys k : replicas) {
      t.register(k.id(), k.verificationKey());
    }
    t.registerRecoverer(master.id(), master.verificationKey());
    t.setMembers("*", java.util.Set.of(replicas.get(0).id(), replicas.get(1).id(),
        replicas.get(2).id()));
    return t;
  }

  /** Trust file text for the weak scheme (used by child processes). */
  String weakTrustFile() {
    return "scheme weak\nnode rs0\nnode rs1\nnode rs2\nrecoverer master\nrrs * rs0 rs1 rs2\n";
  }

  /** The Master's signed (sealing) recovery query; attempt = generation + 1. */
  Certificate seal(WitnessClient c, RegionId r, long gen, long index) throws java.io.IOException {
    return c.query(r, gen, index, gen + 1, master.signer());
  }

  static Statement.LogEntry entry(RegionId r, long gen, long index) {
    byte[] d = new byte[32];
    ByteBuffer.wrap(d).putLong(index).putLong(gen).put(r.volume().getBytes(StandardCharsets.UTF_8),
        0, Math.min(16, r.volume().length()));
    return new Statement.LogEntry(r, gen, index, Hash.of(d), 4096 + (int) (index % 100));
  }

  Certificate tentative(int replica, Statement.LogEntry st) {
    return Certificate.sign(CertType.TENTATIVE_LOG_ENTRY, st, replicas.get(replica).signer());
  }

  Certificate logEntry(Statement.LogEntry st) {
    return Certificate.combine(List.of(tentative(0, st), tentative(1, st), tentative(2, st)));
  }

  Certificate checkpoint(RegionId r, long gen, long through) {
    Statement.Checkpoint st = new Statement.Checkpoint(r, gen, through, through * 10,
        Hash.of(new byte[32]), Hash.of(new byte[32]));
    List<Certificate> t = new ArrayList<>();
    for (NodeKeys k : replicas) {
      t.add(Certificate.sign(CertType.TENTATIVE_CHECKPOINT, st, k.signer()));
    }
    return Certificate.combine(t);
  }
}
