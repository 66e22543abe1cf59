package io.salus.hdfs.digest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import io.salus.core.cert.Statement;
import io.salus.core.crypto.KeyDirectory;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.NodeKeys;
import io.salus.core.crypto.SignatureScheme;
import io.salus.core.merkle.Hash;
import io.salus.hdfs.MiniDfs;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.XAttrSetFlag;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Agreed digests as NameNode xattrs on a real MiniDFSCluster, Ed25519 signatures. */
class DigestXattrTest {
  private static final RegionId REGION = new RegionId("vol", 0);
  private static MiniDFSCluster cluster;
  private static DistributedFileSystem fs;
  private static final List<NodeKeys> RS = new ArrayList<>();
  private static DigestXattr.Trust trust;

  @BeforeAll
  static void start() throws Exception {
    cluster = new MiniDFSCluster.Builder(MiniDfs.conf("digest")).numDataNodes(1).build();
    cluster.waitActive();
    fs = cluster.getFileSystem();
    KeyDirectory dir = new KeyDirectory(SignatureScheme.ED25519);
    for (int i = 0; i < 4; i++) { // rs0..rs2 form the RRS, rs3 is an outsider
      NodeKeys k = NodeKeys.deterministic(SignatureScheme.ED25519, NodeId.of("rs" + i), 7);
      RS.add(k);
      dir.register(k);
    }
    Set<NodeId> rrs = Set.of(RS.get(0).id(), RS.get(1).id(), RS.get(2).id());
    trust = new DigestXattr.Trust(dir, (r, g) -> r.volume().equals("vol") ? rrs : null);
  }

  @AfterAll
  static void stop() {
    if (cluster != null) {
      cluster.shutdown(true);
    }
  }

  private static Certificate checkpoint(RegionId r, long through, int... signers) {
    Statement.Checkpoint st = new Statement.Checkpoint(r, 1, through, through * 3,
        Hash.of(new byte[32]), Hash.of(new byte[32]));
    List<Certificate> t = new ArrayList<>();
    for (int s : signers) {
      t.add(Certificate.sign(CertType.TENTATIVE_CHECKPOINT, st, RS.get(s).signer()));
    }
    return Certificate.combine(t);
  }

  private static Path write(String name, int size, int seed) throws Exception {
    Path p = new Path("/salus/vol/region-0/" + name);
    byte[] b = new byte[size];
    new java.util.Random(seed).nextBytes(b);
    try (FSDataOutputStream out = fs.create(p, true, 4096, (short) 1, 1 << 20)) {
      out.write(b);
    }
    return p;
  }

  @Test
  void filesWithoutAValidAgreedDigestAreListed() throws Exception {
    Certificate cp = checkpoint(REGION, 100, 0, 1, 2);
    Path good = write("flush-good", 300_000, 1);
    DigestXattr.store(fs, good, cp, RS.get(1).signer());
    Path good2 = write("compaction-good", 5000, 2);
    DigestXattr.store(fs, good2, checkpoint(REGION, 120, 0, 1, 2), RS.get(2).signer());

    Path missing = write("flush-missing", 1000, 3);

    Path tampered = write("flush-tampered", 4000, 4);
    DigestXattr.store(fs, tampered, cp, RS.get(0).signer());
    byte[] xattr = DigestXattr.read(fs, tampered);
    // Same length, different bytes: rewrite the file and put the old digest back.
    write("flush-tampered", 4000, 5);
    fs.setXAttr(tampered, DigestXattr.NAME, xattr, EnumSet.of(XAttrSetFlag.CREATE));

    Path appended = write("flush-appended", 4000, 6);
    DigestXattr.store(fs, appended, cp, RS.get(0).signer());
    try (FSDataOutputStream out = fs.append(appended)) {
      out.write(1);
    }

    // A "checkpoint" whose third signature comes from a node outside the RRS.
    Path outsider = write("flush-outsider", 1000, 7);
    DigestXattr.store(fs, outsider, checkpoint(REGION, 100, 0, 1, 3), RS.get(0).signer());

    // Content digest signed by an outsider although the checkpoint itself is fine.
    Path badWriter = write("flush-badwriter", 1000, 8);
    DigestXattr.store(fs, badWriter, cp, RS.get(3).signer());

    Path otherRegion = write("flush-otherregion", 1000, 9);
    DigestXattr.store(fs, otherRegion, checkpoint(new RegionId("vol", 5), 100, 0, 1, 2),
        RS.get(0).signer());

    Path garbage = write("flush-garbage", 1000, 10);
    fs.setXAttr(garbage, DigestXattr.NAME, new byte[] {1, 2, 3},
        EnumSet.of(XAttrSetFlag.CREATE));

    // A flipped byte inside the certificate's signature.
    Path forged = write("flush-forged", 1000, 11);
    DigestXattr.store(fs, forged, cp, RS.get(0).signer());
    byte[] f = DigestXattr.read(fs, forged);
    f[f.length - 3] ^= 1;
    fs.setXAttr(forged, DigestXattr.NAME, f, EnumSet.of(XAttrSetFlag.REPLACE));

    // Replays inside the region: an older flush file renamed over a newer file's name, and a
    // newer file given an older file's bytes and xattr (content and certificate still match).
    Path older = write("flush-older", 2000, 12);
    DigestXattr.store(fs, older, checkpoint(REGION, 50, 0, 1, 2), RS.get(0).signer());
    Path renamed = new Path("/salus/vol/region-0/flush-renamed");
    assertTrue(fs.rename(older, renamed));
    Path older2 = write("flush-older2", 2000, 13);
    DigestXattr.store(fs, older2, checkpoint(REGION, 60, 0, 1, 2), RS.get(0).signer());
    Path copied = write("flush-copied", 2000, 13);
    fs.setXAttr(copied, DigestXattr.NAME, DigestXattr.read(fs, older2),
        EnumSet.of(XAttrSetFlag.CREATE));

    assertTrue(DigestXattr.verify(fs, good, trust, REGION).valid());
    Map<String, DigestXattr.Status> invalid = new TreeMap<>();
    for (DigestXattr.Verdict v : DigestXattr.listInvalid(fs, new Path("/salus/vol/region-0"),
        trust, REGION)) {
      invalid.put(v.file().getName(), v.status());
      assertTrue(v.reason() != null && !v.reason().isEmpty());
    }
    Map<String, DigestXattr.Status> expected = new TreeMap<>(Map.of(
        "flush-missing", DigestXattr.Status.MISSING,
        "flush-tampered", DigestXattr.Status.CONTENT_MISMATCH,
        "flush-appended", DigestXattr.Status.CONTENT_MISMATCH,
        "flush-outsider", DigestXattr.Status.BAD_CERTIFICATE,
        "flush-badwriter", DigestXattr.Status.BAD_WRITER_SIGNATURE,
        "flush-otherregion", DigestXattr.Status.WRONG_REGION,
        "flush-garbage", DigestXattr.Status.MALFORMED,
        "flush-forged", DigestXattr.Status.BAD_CERTIFICATE,
        "flush-renamed", DigestXattr.Status.WRONG_PATH,
        "flush-copied", DigestXattr.Status.WRONG_PATH));
    assertEquals(expected, invalid);

    // The operator command reports the same files and exits 1.
    java.nio.file.Path trustFile = java.nio.file.Files.createTempFile("digest-trust", ".conf");
    StringBuilder t = new StringBuilder("scheme ed25519\n");
    for (NodeKeys k : RS) {
      t.append("node ").append(k.id()).append(' ')
          .append(java.util.HexFormat.of().formatHex(k.verificationKey())).append('\n');
    }
    t.append("rrs vol#* rs0 rs1 rs2\n");
    java.nio.file.Files.writeString(trustFile, t);
    java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
    int code = DigestCheck.run(cluster.getConfiguration(0), new java.io.PrintStream(bytes, true),
        "--fs", fs.getUri().toString(), "--dir", "/salus/vol/region-0", "--trust",
        trustFile.toString(), "--region", "vol#0");
    String report = bytes.toString();
    assertEquals(1, code, report);
    for (Map.Entry<String, DigestXattr.Status> e : expected.entrySet()) {
      assertTrue(report.contains(e.getValue() + " /salus/vol/region-0/" + e.getKey() + ":"),
          report);
    }
    assertTrue(!report.contains("flush-good") && report.contains("10 file(s)"), report);
  }
}
