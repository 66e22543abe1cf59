package io.salus.core.crypto;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/** Files that hold secret keys (a witness's key file, a {@link KeyringFile}). */
public final class SecretFiles {
    private SecretFiles() {
    }

    /**
     * Writes a secret so that it is never readable by anyone but the owner and survives a crash: a temporary file is
     * created with mode 600 <em>at creation</em> (no window with the umask's mode), written, fsynced, renamed
     * atomically onto {@code file}, and the directory is fsynced.
     */
    public static void writeOwnerOnly(Path file, byte[] content) throws IOException {
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
            throw new IOException("cannot install key file " + file + ": " + e.getMessage(), e);
        }
        try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
            d.force(true);
        } catch (IOException ignored) {
            // directory fsync is not supported everywhere
        }
    }
}
