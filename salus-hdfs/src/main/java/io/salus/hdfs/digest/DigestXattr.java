package io.salus.hdfs.digest;

import java.io.IOException;
import java.io.InputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BiFunction;

import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.cert.CertificateVerificationException;
import io.salus.core.cert.RegionId;
import io.salus.core.cert.Statement;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.Signer;
import io.salus.core.crypto.Verifier;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.hadoop.fs.XAttrSetFlag;

/**
 * Agreed digests of flush/compaction files kept as a NameNode xattr ({@value #NAME}, see
 * {@link AgreedDigest} for the format): store one, verify one, and list the files of a region
 * directory that lack a valid one. Thin over the Hadoop {@link FileSystem} xattr API.
 */
public final class DigestXattr {
  /** The xattr name (user namespace: settable by the HBase user, no superuser needed). */
  public static final String NAME = "user.salus.digest";

  /** Result of verifying one file. */
  public enum Status {
    VALID, MISSING, MALFORMED, BAD_CERTIFICATE, WRONG_REGION, BAD_WRITER_SIGNATURE, WRONG_PATH,
    CONTENT_MISMATCH
  }

  /** A verification result with a human-readable reason. */
  public record Verdict(Path file, Status status, String reason) {
    public boolean valid() {
      return status == Status.VALID;
    }
  }

  /** How to check certificates: the replicas' verifier and the RRS members of (region, gen). */
  public record Trust(Verifier verifier, BiFunction<RegionId, Long, Set<NodeId>> members) {
  }

  private DigestXattr() {
  }

  /** SHA-256 of a file's contents, read through the file system (checksummed by HDFS). */
  public static byte[] sha256(FileSystem fs, Path file) throws IOException {
    MessageDigest md;
    try {
      md = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
    byte[] buf = new byte[1 << 16];
    try (InputStream in = fs.open(file)) {
      int n;
      while ((n = in.read(buf)) > 0) {
        md.update(buf, 0, n);
      }
    }
    return md.digest();
  }

  /** The path a digest is bound to: the file's path without scheme and authority. */
  public static String boundPath(FileSystem fs, Path file) {
    return Path.getPathWithoutSchemeAndAuthority(fs.makeQualified(file)).toString();
  }

  /**
   * Computes the file's digest and stores it with the agreed CHECKPOINT certificate as the file's
   * xattr (replacing any earlier one). The writer's signature binds the file's path, so call it
   * after the file is closed and in its final place (HBase renames flush files out of
   * {@code .tmp}).
   */
  public static AgreedDigest store(FileSystem fs, Path file, Certificate checkpoint, Signer writer)
      throws IOException {
    if (checkpoint.type() != CertType.CHECKPOINT) {
      throw new IllegalArgumentException("a file digest is bound to a CHECKPOINT certificate, got "
          + checkpoint.type());
    }
    long len = fs.getFileStatus(file).getLen();
    AgreedDigest d = AgreedDigest.create(sha256(fs, file), len, boundPath(fs, file), checkpoint,
        writer);
    fs.setXAttr(file, NAME, d.encode(), EnumSet.of(XAttrSetFlag.CREATE, XAttrSetFlag.REPLACE));
    return d;
  }

  /** Reads the xattr; null if the file has none. */
  public static byte[] read(FileSystem fs, Path file) throws IOException {
    Map<String, byte[]> all = fs.getXAttrs(file);
    return all == null ? null : all.get(NAME);
  }

  /**
   * Verifies a file: the xattr decodes, its CHECKPOINT certificate carries the three signatures of
   * the region's RRS (and names {@code expectedRegion} if given), the writer is one of them and
   * signed the content digest, and the digest and length match the file's current contents.
   */
  public static Verdict verify(FileSystem fs, Path file, Trust trust, RegionId expectedRegion)
      throws IOException {
    byte[] raw = read(fs, file);
    if (raw == null) {
      return new Verdict(file, Status.MISSING, "no " + NAME + " xattr");
    }
    AgreedDigest d;
    Certificate cert;
    try {
      d = AgreedDigest.decode(raw);
      cert = d.checkpoint();
    } catch (IllegalArgumentException e) {
      return new Verdict(file, Status.MALFORMED, e.getMessage());
    }
    if (cert.type() != CertType.CHECKPOINT) {
      return new Verdict(file, Status.BAD_CERTIFICATE, "certificate is " + cert.type()
          + ", not a CHECKPOINT");
    }
    Statement.Checkpoint st = cert.statement(Statement.Checkpoint.class);
    if (expectedRegion != null && !expectedRegion.equals(st.region())) {
      return new Verdict(file, Status.WRONG_REGION, "certificate is for region " + st.region()
          + ", file belongs to " + expectedRegion);
    }
    Set<NodeId> members = trust.members().apply(st.region(), st.generation());
    if (members == null) {
      return new Verdict(file, Status.BAD_CERTIFICATE, "no RRS membership known for "
          + st.region() + " generation " + st.generation());
    }
    try {
      cert.verifyOrThrow(trust.verifier(), members);
    } catch (CertificateVerificationException e) {
      return new Verdict(file, Status.BAD_CERTIFICATE, e.getMessage());
    }
    if (!cert.signers().contains(d.writer()) || !d.writerSignatureValid(trust.verifier())) {
      return new Verdict(file, Status.BAD_WRITER_SIGNATURE, "content digest not validly signed by"
          + " a replica of the checkpoint (writer " + d.writer() + ")");
    }
    String here = boundPath(fs, file);
    if (!here.equals(d.path())) {
      return new Verdict(file, Status.WRONG_PATH, "digest was signed for " + d.path()
          + ", not for " + here + " (a file moved or copied into another file's place)");
    }
    long len = fs.getFileStatus(file).getLen();
    if (len != d.length()) {
      return new Verdict(file, Status.CONTENT_MISMATCH, "file is " + len + " bytes, digest says "
          + d.length());
    }
    if (!MessageDigest.isEqual(sha256(fs, file), d.sha256())) {
      return new Verdict(file, Status.CONTENT_MISMATCH, "SHA-256 of the contents differs from the"
          + " agreed digest");
    }
    return new Verdict(file, Status.VALID, "checkpoint " + st.region() + " gen " + st.generation()
        + " through " + st.throughIndex());
  }

  /** Every file under {@code regionDir} (recursively) that lacks a valid agreed digest. */
  public static List<Verdict> listInvalid(FileSystem fs, Path regionDir, Trust trust,
      RegionId expectedRegion) throws IOException {
    List<Verdict> bad = new ArrayList<>();
    RemoteIterator<LocatedFileStatus> it = fs.listFiles(regionDir, true);
    while (it.hasNext()) {
      LocatedFileStatus st = it.next();
      if (!st.isFile()) {
        continue;
      }
      Verdict v = verify(fs, st.getPath(), trust, expectedRegion);
      if (!v.valid()) {
        bad.add(v);
      }
    }
    return bad;
  }
}
