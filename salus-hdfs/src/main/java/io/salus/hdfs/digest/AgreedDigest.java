package io.salus.hdfs.digest;

import java.util.Arrays;

import io.salus.core.cert.Certificate;
import io.salus.core.cert.Wire;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.Signer;
import io.salus.core.crypto.Verifier;

/**
 * The value of the {@value DigestXattr#NAME} xattr of a flush/compaction file (format version 2,
 * big-endian):
 *
 * <pre>
 *   u8   version = 2
 *   32   SHA-256 of the file's contents
 *   i64  file length in bytes
 *   u32  p, p bytes: the file's path (UTF-8, without scheme and authority) the digest is for
 *   u8   writer id length, writer id (UTF-8): the replica that wrote this file
 *   u32  n, n bytes: the writer's signature over the signed bytes below (its scheme)
 *   u32  m, m bytes: the CHECKPOINT certificate (salus-core encoding, unchanged)
 * signed bytes = "salus-file-digest-v2" || SHA-256 || i64 length || u32 p || path || certificate
 * </pre>
 *
 * The signature binds the path: an older file (or a copy of its bytes and xattr) put in another
 * file's place inside the region does not verify. Version 1 (no path) is refused.
 *
 * The CHECKPOINT certificate is what the three replicas agreed on (region state through log index
 * k has region-tree root r); each replica's flush file may differ byte for byte (HBase can flush on
 * its own), so the content digest is signed by the writing replica, which must be one of the three
 * signers of the checkpoint.
 */
public record AgreedDigest(byte[] sha256, long length, String path, NodeId writer,
    byte[] writerSignature, byte[] checkpointBytes) {
  public static final int VERSION = 2;
  private static final byte[] DOMAIN = "salus-file-digest-v2".getBytes(
      java.nio.charset.StandardCharsets.US_ASCII);

  public static AgreedDigest create(byte[] sha256, long length, String path,
      Certificate checkpoint, Signer writer) {
    byte[] cert = checkpoint.encode();
    byte[] sig = writer.sign(signedBytes(sha256, length, path, cert));
    return new AgreedDigest(sha256, length, path, writer.id(), sig, cert);
  }

  static byte[] signedBytes(byte[] sha256, long length, String path, byte[] cert) {
    return new Wire.Out().bytes(DOMAIN).bytes(sha256).i64(length)
        .blob(path.getBytes(java.nio.charset.StandardCharsets.UTF_8)).bytes(cert).toByteArray();
  }

  public boolean writerSignatureValid(Verifier v) {
    return v.verify(writer, signedBytes(sha256, length, path, checkpointBytes), writerSignature);
  }

  public Certificate checkpoint() {
    return Certificate.decode(checkpointBytes);
  }

  public byte[] encode() {
    return new Wire.Out().u8(VERSION).bytes(sha256).i64(length)
        .blob(path.getBytes(java.nio.charset.StandardCharsets.UTF_8)).str8(writer.name())
        .blob(writerSignature).blob(checkpointBytes).toByteArray();
  }

  /** Decodes an xattr value; throws IllegalArgumentException naming the problem. */
  public static AgreedDigest decode(byte[] value) {
    Wire.In in = new Wire.In(value);
    int v = in.u8("digest xattr version");
    if (v != VERSION) {
      throw new IllegalArgumentException("digest xattr version " + v + " unsupported (this build"
          + " reads " + VERSION + (v == 1 ? "; version 1 does not bind the file path: re-sign the"
          + " file's digest" : "") + ")");
    }
    byte[] sha = in.bytes(32, "SHA-256");
    long len = in.i64("file length");
    String path = new String(in.blob("file path"), java.nio.charset.StandardCharsets.UTF_8);
    String w = in.str8("writer id");
    if (w.isEmpty()) {
      throw new IllegalArgumentException("digest xattr has an empty writer id");
    }
    byte[] sig = in.blob("writer signature");
    byte[] cert = in.blob("checkpoint certificate");
    in.expectEnd("digest xattr");
    return new AgreedDigest(sha, len, path, NodeId.of(w), sig, cert);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof AgreedDigest d && Arrays.equals(d.sha256, sha256) && d.length == length
        && d.path.equals(path) && d.writer.equals(writer) && Arrays.equals(d.writerSignature, writerSignature)
        && Arrays.equals(d.checkpointBytes, checkpointBytes);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(sha256);
  }
}
