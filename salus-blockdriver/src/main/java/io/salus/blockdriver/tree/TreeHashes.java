package io.salus.blockdriver.tree;

import io.salus.core.merkle.EmptyHashes;
import io.salus.core.merkle.HashAlgorithm;
import java.util.Locale;

/**
 * Thin adapter from the block driver's byte-array view of hashes to salus-core's
 * {@link HashAlgorithm} / {@link EmptyHashes} (leaf = {@code H(0x00 || block)}, node =
 * {@code H(0x01 || left || right)}, unwritten block = leaf of an all-zero block). Also maps the
 * names used in the catalog and CLI ("SHA-256", "BLAKE3") to the enum.
 */
public final class TreeHashes {
  private final HashAlgorithm alg;
  private final int blockSize;
  private final EmptyHashes empty;

  private TreeHashes(HashAlgorithm alg, int blockSize) {
    this.alg = alg;
    this.blockSize = blockSize;
    this.empty = EmptyHashes.of(alg, blockSize);
  }

  /** SHA-256 (default) or BLAKE3 (Bouncy Castle); validates the name. */
  public static TreeHashes forName(String name) {
    return forName(name, 4096);
  }

  public static TreeHashes forName(String name, int blockSize) {
    return new TreeHashes(algorithm(name), blockSize);
  }

  public static HashAlgorithm algorithm(String name) {
    String n = name == null ? "SHA-256" : name.toUpperCase(Locale.ROOT).replace("_", "-");
    switch (n) {
      case "SHA-256":
      case "SHA256":
        return HashAlgorithm.SHA256;
      case "BLAKE3":
        return HashAlgorithm.BLAKE3;
      default:
        throw new IllegalArgumentException("unknown hash algorithm '" + name
            + "': use SHA-256 (default) or BLAKE3");
    }
  }

  public HashAlgorithm algorithm() {
    return alg;
  }

  public String name() {
    return alg == HashAlgorithm.SHA256 ? "SHA-256" : "BLAKE3";
  }

  public int blockSize() {
    return blockSize;
  }

  /** Leaf hash of the block at {@code data[off .. off + blockSize)}. */
  public byte[] leaf(byte[] data, int off) {
    return alg.leafHash(data, off, blockSize).bytes();
  }

  /** Root hash of an all-empty subtree of the given height (0 = leaf of a zero block). */
  public byte[] empty(int height) {
    return empty.at(height).bytes();
  }
}
