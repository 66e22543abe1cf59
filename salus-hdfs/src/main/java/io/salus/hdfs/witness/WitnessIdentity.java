package io.salus.hdfs.witness;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.OpenOption;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFileAttributeView;
import java.util.Set;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.HexFormat;

import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.NodeKeys;
import io.salus.core.crypto.SignatureScheme;

/**
 * The witness's own signing identity (for NO_NEXT_ENTRY). The 32-byte secret lives in a key file,
 * by default {@code <dir>/witness.key} (hex, mode 600), generated on first start.
 */
public final class WitnessIdentity {
  private WitnessIdentity() {
  }

  public static NodeKeys loadOrCreate(NodeId id, SignatureScheme scheme, Path keyFile)
      throws IOException {
    if (scheme == SignatureScheme.WEAK_CRC32C) {
      return NodeKeys.fromSecret(scheme, id, new byte[32]);
    }
    byte[] secret;
    if (Files.exists(keyFile)) {
      String hex = Files.readString(keyFile, StandardCharsets.UTF_8).strip();
      try {
        secret = HexFormat.of().parseHex(hex);
      } catch (IllegalArgumentException e) {
        throw new IOException("witness key file " + keyFile + " is not hex (" + e.getMessage()
            + "); delete it to generate a new key, then redistribute the verification key");
      }
      if (secret.length != 32) {
        throw new IOException("witness key file " + keyFile + " holds " + secret.length
            + " bytes, expected 32; delete it to generate a new key");
      }
    } else {
      secret = new byte[32];
      new SecureRandom().nextBytes(secret);
      writeOwnerOnly(keyFile, (HexFormat.of().formatHex(secret) + "\n")
          .getBytes(StandardCharsets.UTF_8));
    }
    return NodeKeys.fromSecret(scheme, id, secret);
  }

  /**
   * Writes a secret so that it is never readable by anyone but the owner and survives a crash: a
   * temporary file is created with mode 600 <em>at creation</em> (no window with the umask's
   * mode), written, fsynced, renamed atomically onto {@code file}, and the directory is fsynced.
   */
  static void writeOwnerOnly(Path file, byte[] content) throws IOException {
    Path dir = file.toAbsolutePath().getParent();
    Files.createDirectories(dir);
    Path tmp = dir.resolve(file.getFileName() + ".tmp-" + ProcessHandle.current().pid());
    Set<OpenOption> opts = Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
    boolean posix = Files.getFileStore(dir).supportsFileAttributeView(PosixFileAttributeView.class);
    try (FileChannel ch = posix
        ? FileChannel.open(tmp, opts, PosixFilePermissions.asFileAttribute(
            PosixFilePermissions.fromString("rw-------")))
        : FileChannel.open(tmp, opts)) {
      ByteBuffer b = ByteBuffer.wrap(content);
      while (b.hasRemaining()) {
        ch.write(b);
      }
      ch.force(true);
    } catch (IOException e) {
      Files.deleteIfExists(tmp);
      throw e;
    }
    try {
      Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      Files.deleteIfExists(tmp);
      throw new IOException("cannot install witness key file " + file + ": " + e.getMessage(), e);
    }
    try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
      d.force(true);
    } catch (IOException ignored) {
      // directory fsync is not supported everywhere
    }
  }
}
