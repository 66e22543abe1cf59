package io.salus.hdfs.digest;

import java.util.Arrays;

import io.salus.core.cert.Certificate;
import io.salus.core.cert.Wire;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.Signer;
import io.salus.core.crypto.Verifier;

/**
 * The value of the {@value DigestXattr#NAME} xattr of a flush/compaction file (format version 1,
 * big-endian):
 *
 * <pre>
 *   u8   version = 1
 *   32   SHA-256 of the file's contents
 *   i64  file length in bytes
 *   u8   writer id length, writer id (UTF-8): the replica that wrote this file
 *   u32  n, n bytes: the writer's signature over the signed bytes below (its scheme)
 *   u32  m, m bytes: the CHECKPOINT certificate (salus-core encoding, unchanged)
 * signed bytes = "salus-file-digest-v1" || SHA-256 || i64 length || certificate bytes
 * </pre>
 *
 * The CHECKPOINT certificate is what the three replicas agreed on (region state through log index
 * k has region-tree root r); each replica's flush file may differ byte for byte (HBase can flush on
 * its own), so the content digest is signed by the writing replica, which must be one of the three
 * signers of the checkpoint.
 */
public record AgreedDigest(byte[] sha256, long length, NodeId writer, byte[] writerSignature,
    byte[] checkpointBytes) {
  public static final int VERSION = 1;
  private static final byte[] DOMAIN = "salus-file-digest-v1".getBytes(
      java.nio.charset.StandardCharsets.US_ASCII);

  public static AgreedDigest create(byte[] sha256, long length, Certificate checkpoint,
      Signer writer) {
    byte[] cert = checkpoint.encode();
    byte[] sig = writer.sign(signedBytes(sha256, length, cert));
    return new AgreedDigest(sha256, length, writer.id(), sig, cert);
  }

  static byte[] signedBytes(byte[] sha256, long length, byte[] cert) {
    return new Wire.Out().bytes(DOMAIN).bytes(sha256).i64(length).bytes(cert).toByteArray();
  }

  public boolean writerSignatureValid(Verifier v) {
    return v.verify(writer, signedBytes(sha256, length, checkpointBytes), writerSignature);
  }

  public Certificate checkpoint() {
    return Certificate.decode(checkpointBytes);
  }

  public byte[] encode() {
    return new Wire.Out().u8(VERSION).bytes(sha256).i64(length).str8(writer.name())
        .blob(writerSignature).blob(checkpointBytes).toByteArray();
  }

  /** Decodes an xattr value; throws IllegalArgumentException naming the problem. */
  public static AgreedDigest decode(byte[] value) {
    Wire.In in = new Wire.In(value);
    int v = in.u8("digest xattr version");
    if (v != VERSION) {
      throw new IllegalArgumentException("digest xattr version " + v + " unsupported (this build"
          + " reads " + VERSION + ")");
    }
    byte[] sha = in.bytes(32, "SHA-256");
    long len = in.i64("file length");
    String w = in.str8("writer id");
    if (w.isEmpty()) {
      throw new IllegalArgumentException("digest xattr has an empty writer id");
    }
    byte[] sig = in.blob("writer signature");
    byte[] cert = in.blob("checkpoint certificate");
    in.expectEnd("digest xattr");
    return new AgreedDigest(sha, len, NodeId.of(w), sig, cert);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof AgreedDigest d && Arrays.equals(d.sha256, sha256) && d.length == length
        && d.writer.equals(writer) && Arrays.equals(d.writerSignature, writerSignature)
        && Arrays.equals(d.checkpointBytes, checkpointBytes);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(sha256);
  }
}
