package io.exalt.agent;

import io.exalt.agent.boot.FileHooks;
import java.io.File;
import java.io.FileDescriptor;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import net.bytebuddy.asm.Advice;

/**
 * Advice inlined into the JDK file classes. Each piece calls {@link FileHooks}; when the hook reports the call
 * as handled the original method body is skipped and the hook's result returned.
 */
final class FileAdvice {
    private FileAdvice() {
    }

    // ------------------------------------------------------------------- constructors / close / rename

    static final class OpenWrite {
        @Advice.OnMethodExit
        static void exit(@Advice.FieldValue("fd") FileDescriptor fd, @Advice.Argument(0) File f) throws Exception {
            FileHooks.openedFile(fd, f, true);
        }
    }

    static final class OpenRead {
        @Advice.OnMethodExit
        static void exit(@Advice.FieldValue("fd") FileDescriptor fd, @Advice.Argument(0) File f) throws Exception {
            FileHooks.openedFile(fd, f, false);
        }
    }

    static final class OpenRaf {
        @Advice.OnMethodExit
        static void exit(@Advice.FieldValue("fd") FileDescriptor fd, @Advice.Argument(0) File f, @Advice.Argument(1) String mode)
                throws Exception {
            FileHooks.openedFile(fd, f, mode != null && mode.indexOf('w') >= 0);
        }
    }

    static final class OpenChannel {
        @Advice.OnMethodExit
        static void exit(@Advice.FieldValue("fd") FileDescriptor fd, @Advice.FieldValue("path") String path,
                @Advice.FieldValue("writable") boolean writable) throws Exception {
            FileHooks.opened(fd, path, writable);
        }
    }

    static final class Close {
        @Advice.OnMethodEnter
        static void enter(@Advice.FieldValue("fd") FileDescriptor fd) throws Exception {
            FileHooks.closed(fd);
        }
    }

    static final class RenameTo {
        @Advice.OnMethodExit
        static void exit(@Advice.This File self, @Advice.Argument(0) File dest, @Advice.Return boolean ok) {
            if (ok) {
                FileHooks.renamed(self.getPath(), dest.getPath());
            }
        }
    }

    /** File.setLastModified: the open file's staleness check pauses while the JDK sets the time (see FileHooks.settingTimes). */
    static final class SetLastModified {
        @Advice.OnMethodEnter
        static Object enter(@Advice.This File self) {
            return FileHooks.settingTimes(self.getPath());
        }

        @Advice.OnMethodExit(onThrowable = Throwable.class)
        static void exit(@Advice.This File self, @Advice.Enter Object token, @Advice.Return boolean ok) {
            FileHooks.timesSet(self.getPath(), token, ok);
        }
    }

    static final class FilesSetLastModifiedTime {
        @Advice.OnMethodExit
        static void exit(@Advice.Argument(0) java.nio.file.Path p) {
            FileHooks.timesSet(p.toString());
        }
    }

    /**
     * {@code setTimes} of the basic attribute view (and its posix/unix/dos subclasses): behind Files.setLastModifiedTime,
     * Files.setAttribute(p, "lastModifiedTime", t) and BasicFileAttributeView.setTimes. A new modification time set
     * through any of them is the application's, not a change outside the agent (before, the last two were not hooked and
     * the file was refused, while open and at every later open).
     */
    static final class BasicSetTimes {
        @Advice.OnMethodEnter
        static Object enter(@Advice.FieldValue("file") Object file, @Advice.Argument(0) java.nio.file.attribute.FileTime mtime) {
            return mtime != null && file != null ? FileHooks.settingTimes(file.toString()) : null;
        }

        @Advice.OnMethodExit(onThrowable = Throwable.class)
        static void exit(@Advice.FieldValue("file") Object file, @Advice.Argument(0) java.nio.file.attribute.FileTime mtime,
                @Advice.Enter Object token, @Advice.Thrown Throwable thrown) {
            if (mtime != null && file != null) {
                FileHooks.timesSet(file.toString(), token, thrown == null);
            }
        }
    }

    static final class FilesMove {
        @Advice.OnMethodExit
        static void exit(@Advice.Argument(0) java.nio.file.Path src, @Advice.Argument(1) java.nio.file.Path dst) {
            FileHooks.renamed(src.toString(), dst.toString());
        }
    }

    // ------------------------------------------------------------------------------------ stream writes

    static final class Write1 {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static boolean enter(@Advice.FieldValue("fd") FileDescriptor fd, @Advice.Argument(0) int b) throws Exception {
            return FileHooks.write1(fd, b);
        }
    }

    static final class WriteArray {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static boolean enter(@Advice.FieldValue("fd") FileDescriptor fd, @Advice.Argument(0) byte[] b) throws Exception {
            return FileHooks.write(fd, b, 0, b.length);
        }
    }

    static final class WriteRange {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static boolean enter(@Advice.FieldValue("fd") FileDescriptor fd, @Advice.Argument(0) byte[] b, @Advice.Argument(1) int off,
                @Advice.Argument(2) int len) throws Exception {
            return FileHooks.write(fd, b, off, len);
        }
    }

    // RandomAccessFile writes: only a read-write file ("rw", "rws", "rwd") is written by the hook; on a read-only one
    // ("r") the JDK's own native write runs and fails as it must (EBADF), instead of the agent's read-write handle
    // writing the file the application opened read-only.

    static final class RafWrite1 {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static boolean enter(@Advice.FieldValue("fd") FileDescriptor fd, @Advice.FieldValue("rw") boolean rw,
                @Advice.Argument(0) int b) throws Exception {
            return rw && FileHooks.write1(fd, b);
        }
    }

    static final class RafWriteArray {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static boolean enter(@Advice.FieldValue("fd") FileDescriptor fd, @Advice.FieldValue("rw") boolean rw,
                @Advice.Argument(0) byte[] b) throws Exception {
            return rw && FileHooks.write(fd, b, 0, b.length);
        }
    }

    static final class RafWriteRange {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static boolean enter(@Advice.FieldValue("fd") FileDescriptor fd, @Advice.FieldValue("rw") boolean rw,
                @Advice.Argument(0) byte[] b, @Advice.Argument(1) int off, @Advice.Argument(2) int len) throws Exception {
            return rw && FileHooks.write(fd, b, off, len);
        }
    }

    /** RandomAccessFile.writeBytes(String): the JDK calls a private native method, so it is handled here. */
    static final class RafWriteBytesString {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static boolean enter(@Advice.FieldValue("fd") FileDescriptor fd, @Advice.FieldValue("rw") boolean rw,
                @Advice.Argument(0) String s) throws Exception {
            return rw && FileHooks.writeString(fd, s, false);
        }
    }

    /** RandomAccessFile.writeChars(String): as {@link RafWriteBytesString}, two big-endian bytes per char. */
    static final class RafWriteCharsString {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static boolean enter(@Advice.FieldValue("fd") FileDescriptor fd, @Advice.FieldValue("rw") boolean rw,
                @Advice.Argument(0) String s) throws Exception {
            return rw && FileHooks.writeString(fd, s, true);
        }
    }

    /** AsynchronousFileChannel.open: not supported on emulated files, refused before the file is opened. */
    static final class AsyncOpen {
        @Advice.OnMethodEnter
        static void enter(@Advice.Argument(0) java.nio.file.Path p) throws Exception {
            FileHooks.refuseAsynchronous(p);
        }
    }

    /** Files.copy(Path, Path, CopyOption...): an emulated source is copied logically (the native copy sees holes). */
    static final class FilesCopy {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static java.nio.file.Path enter(@Advice.Argument(0) java.nio.file.Path src, @Advice.Argument(1) java.nio.file.Path dst,
                @Advice.Argument(2) java.nio.file.CopyOption[] options) throws Exception {
            return FileHooks.copy(src, dst, options);
        }

        @Advice.OnMethodExit
        static void exit(@Advice.Enter java.nio.file.Path r, @Advice.Return(readOnly = false) java.nio.file.Path ret) {
            if (r != null) {
                ret = r;
            }
        }
    }

    // ------------------------------------------------------------------------------------- stream reads

    static final class Read1 {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static Integer enter(@Advice.FieldValue("fd") FileDescriptor fd) throws Exception {
            return FileHooks.read1(fd);
        }

        @Advice.OnMethodExit
        static void exit(@Advice.Enter Integer r, @Advice.Return(readOnly = false) int ret) {
            if (r != null) {
                ret = r;
            }
        }
    }

    static final class ReadArray {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static Integer enter(@Advice.FieldValue("fd") FileDescriptor fd, @Advice.Argument(0) byte[] b) throws Exception {
            return FileHooks.read(fd, b, 0, b.length);
        }

        @Advice.OnMethodExit
        static void exit(@Advice.Enter Integer r, @Advice.Return(readOnly = false) int ret) {
            if (r != null) {
                ret = r;
            }
        }
    }

    static final class ReadRange {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static Integer enter(@Advice.FieldValue("fd") FileDescriptor fd, @Advice.Argument(0) byte[] b, @Advice.Argument(1) int off,
                @Advice.Argument(2) int len) throws Exception {
            return FileHooks.read(fd, b, off, len);
        }

        @Advice.OnMethodExit
        static void exit(@Advice.Enter Integer r, @Advice.Return(readOnly = false) int ret) {
            if (r != null) {
                ret = r;
            }
        }
    }

    static final class ReadAll {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static byte[] enter(@Advice.FieldValue("fd") FileDescriptor fd) throws Exception {
            return FileHooks.readN(fd, -1);
        }

        @Advice.OnMethodExit
        static void exit(@Advice.Enter byte[] r, @Advice.Return(readOnly = false) byte[] ret) {
            if (r != null) {
                ret = r;
            }
        }
    }

    static final class ReadN {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static byte[] enter(@Advice.FieldValue("fd") FileDescriptor fd, @Advice.Argument(0) int len) throws Exception {
            return FileHooks.readN(fd, len);
        }

        @Advice.OnMethodExit
        static void exit(@Advice.Enter byte[] r, @Advice.Return(readOnly = false) byte[] ret) {
            if (r != null) {
                ret = r;
            }
        }
    }

    // --------------------------------------------------------------------------------------- channels

    static final class ChRead {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static Integer enter(@Advice.FieldValue("fd") FileDescriptor fd, @Advice.FieldValue("readable") boolean readable,
                @Advice.Argument(0) ByteBuffer dst) throws Exception {
            return readable ? FileHooks.chRead(fd, dst, -1L) : null;
        }

        @Advice.OnMethodExit
        static void exit(@Advice.Enter Integer r, @Advice.Return(readOnly = false) int ret) {
            if (r != null) {
                ret = r;
            }
        }
    }

    static final class ChReadAt {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static Integer enter(@Advice.FieldValue("fd") FileDescriptor fd, @Advice.FieldValue("readable") boolean readable,
                @Advice.Argument(0) ByteBuffer dst, @Advice.Argument(1) long pos) throws Exception {
            return readable && pos >= 0 ? FileHooks.chRead(fd, dst, pos) : null;
        }

        @Advice.OnMethodExit
        static void exit(@Advice.Enter Integer r, @Advice.Return(readOnly = false) int ret) {
            if (r != null) {
                ret = r;
            }
        }
    }

    static final class ChReadV {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static Long enter(@Advice.FieldValue("fd") FileDescriptor fd, @Advice.FieldValue("readable") boolean readable,
                @Advice.Argument(0) ByteBuffer[] dsts, @Advice.Argument(1) int off, @Advice.Argument(2) int len) throws Exception {
            return readable ? FileHooks.chReadV(fd, dsts, off, len) : null;
        }

        @Advice.OnMethodExit
        static void exit(@Advice.Enter Long r, @Advice.Return(readOnly = false) long ret) {
            if (r != null) {
                ret = r;
            }
        }
    }

    static final class ChWrite {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static Integer enter(@Advice.FieldValue("fd") FileDescriptor fd, @Advice.FieldValue("writable") boolean writable,
                @Advice.Argument(0) ByteBuffer src) throws Exception {
            return writable ? FileHooks.chWrite(fd, src, -1L) : null;
        }

        @Advice.OnMethodExit
        static void exit(@Advice.Enter Integer r, @Advice.Return(readOnly = false) int ret) {
            if (r != null) {
                ret = r;
            }
        }
    }

    static final class ChWriteAt {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static Integer enter(@Advice.FieldValue("fd") FileDescriptor fd, @Advice.FieldValue("writable") boolean writable,
                @Advice.Argument(0) ByteBuffer src, @Advice.Argument(1) long pos) throws Exception {
            return writable && pos >= 0 ? FileHooks.chWrite(fd, src, pos) : null;
        }

        @Advice.OnMethodExit
        static void exit(@Advice.Enter Integer r, @Advice.Return(readOnly = false) int ret) {
            if (r != null) {
                ret = r;
            }
        }
    }

    static final class ChWriteV {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static Long enter(@Advice.FieldValue("fd") FileDescriptor fd, @Advice.FieldValue("writable") boolean writable,
                @Advice.Argument(0) ByteBuffer[] srcs, @Advice.Argument(1) int off, @Advice.Argument(2) int len) throws Exception {
            return writable ? FileHooks.chWriteV(fd, srcs, off, len) : null;
        }

        @Advice.OnMethodExit
        static void exit(@Advice.Enter Long r, @Advice.Return(readOnly = false) long ret) {
            if (r != null) {
                ret = r;
            }
        }
    }

    static final class TransferTo {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static Long enter(@Advice.This FileChannel self, @Advice.FieldValue("fd") FileDescriptor fd, @Advice.Argument(0) long pos,
                @Advice.Argument(1) long count, @Advice.Argument(2) WritableByteChannel target) throws Exception {
            return FileHooks.transferTo(self, fd, pos, count, target);
        }

        @Advice.OnMethodExit
        static void exit(@Advice.Enter Long r, @Advice.Return(readOnly = false) long ret) {
            if (r != null) {
                ret = r;
            }
        }
    }

    static final class TransferFrom {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static Long enter(@Advice.This FileChannel self, @Advice.FieldValue("fd") FileDescriptor fd,
                @Advice.FieldValue("writable") boolean writable, @Advice.Argument(0) ReadableByteChannel src,
                @Advice.Argument(1) long pos, @Advice.Argument(2) long count) throws Exception {
            // not writable: the JDK throws NonWritableChannelException before reading the source (the hook read first)
            return writable ? FileHooks.transferFrom(self, fd, src, pos, count) : null;
        }

        @Advice.OnMethodExit
        static void exit(@Advice.Enter Long r, @Advice.Return(readOnly = false) long ret) {
            if (r != null) {
                ret = r;
            }
        }
    }

    static final class Map {
        @Advice.OnMethodEnter
        static void enter(@Advice.FieldValue("fd") FileDescriptor fd, @Advice.Argument(0) FileChannel.MapMode mode,
                @Advice.Argument(1) long pos, @Advice.Argument(2) long size) throws Exception {
            FileHooks.mapping(fd, mode, pos, size);
        }

        @Advice.OnMethodExit(onThrowable = Throwable.class)
        static void exit(@Advice.Return MappedByteBuffer ret) {
            FileHooks.mapped(ret);
        }
    }

    /** FileChannel.force: an emulated file's index xattr is made durable too (FileHooks.forced). */
    static final class Force {
        @Advice.OnMethodExit
        static void exit(@Advice.FieldValue("fd") FileDescriptor fd) throws Exception {
            FileHooks.forced(fd);
        }
    }

    /**
     * FileChannel.truncate: an emulated file is truncated by the agent under the file's lock (the original is skipped);
     * a channel not open for writing runs the original, which throws NonWritableChannelException.
     */
    static final class Truncate {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static boolean enter(@Advice.FieldValue("fd") FileDescriptor fd, @Advice.FieldValue("writable") boolean writable,
                @Advice.Argument(0) long size) throws Exception {
            return writable && FileHooks.truncate(fd, size);
        }

        @Advice.OnMethodExit
        static void exit(@Advice.This FileChannel self, @Advice.Enter boolean handled,
                @Advice.Return(readOnly = false) FileChannel ret) throws Exception {
            if (handled) {
                ret = self;
            }
        }
    }
}
