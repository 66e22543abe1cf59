package io.salus.blockdriver.tree;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Locale;

/**
 * Hash functions of the client volume tree. Leaves and inner nodes are domain separated
 * ({@code H(0x00 || block)} and {@code H(0x01 || left || right)}); the hash of an unwritten block
 * is the leaf hash of an all-zero block, so unwritten and zero-filled blocks are the same leaf and
 * need no storage. {@link #empty(int)} is the root of an all-empty subtree of that height.
 */
public abstract class TreeHashes {
  private final int blockSize;
  private byte[][] empties;

  protected TreeHashes(int blockSize) {
    this.blockSize = blockSize;
  }

  /** SHA-256 (default) or BLAKE3 (Bouncy Castle). */
  public static TreeHashes forName(String name) {
    return forName(name, 4096);
  }

  public static TreeHashes forName(String name, int blockSize) {
    String n = name == null ? "SHA-256" : name.toUpperCase(Locale.ROOT).replace("_", "-");
    switch (n) {
      case "SHA-256":
      case "SHA256":
        return new Jdk("SHA-256", blockSize);
      case "BLAKE3":
        return new Blake3(blockSize);
      default:
        throw new IllegalArgumentException("unknown hash algorithm '" + name
            + "': use SHA-256 (default) or BLAKE3");
    }
  }

  public abstract String name();

  public int blockSize() {
    return blockSize;
  }

  public int length() {
    return 32;
  }

  protected abstract byte[] digest(byte prefix, byte[] a, int aOff, int aLen, byte[] b);

  public byte[] leaf(byte[] data, int off) {
    return digest((byte) 0, data, off, blockSize, null);
  }

  public byte[] node(byte[] left, byte[] right) {
    return digest((byte) 1, left, 0, left.length, right);
  }

  /** Root hash of an all-empty subtree of the given height (0 = leaf of a zero block). */
  public synchronized byte[] empty(int height) {
    if (empties == null) {
      empties = new byte[65][];
      empties[0] = leaf(new byte[blockSize], 0);
      for (int i = 1; i < empties.length; i++) {
        empties[i] = node(empties[i - 1], empties[i - 1]);
      }
    }
    return empties[height];
  }

  private static final class Jdk extends TreeHashes {
    private final String alg;
    private final ThreadLocal<MessageDigest> md;

    Jdk(String alg, int blockSize) {
      super(blockSize);
      this.alg = alg;
      this.md = ThreadLocal.withInitial(() -> {
        try {
          return MessageDigest.getInstance(alg);
        } catch (NoSuchAlgorithmException e) {
          throw new IllegalStateException(e);
        }
      });
    }

    @Override
    public String name() {
      return alg;
    }

    @Override
    protected byte[] digest(byte prefix, byte[] a, int aOff, int aLen, byte[] b) {
      MessageDigest d = md.get();
      d.update(prefix);
      d.update(a, aOff, aLen);
      if (b != null) {
        d.update(b);
      }
      return d.digest();
    }
  }

  private static final class Blake3 extends TreeHashes {
    private final ThreadLocal<org.bouncycastle.crypto.digests.Blake3Digest> md =
        ThreadLocal.withInitial(() -> new org.bouncycastle.crypto.digests.Blake3Digest(256));

    Blake3(int blockSize) {
      super(blockSize);
    }

    @Override
    public String name() {
      return "BLAKE3";
    }

    @Override
    protected byte[] digest(byte prefix, byte[] a, int aOff, int aLen, byte[] b) {
      org.bouncycastle.crypto.digests.Blake3Digest d = md.get();
      d.reset();
      d.update(prefix);
      d.update(a, aOff, aLen);
      if (b != null) {
        d.update(b, 0, b.length);
      }
      byte[] out = new byte[32];
      d.doFinal(out, 0);
      return out;
    }
  }
}
