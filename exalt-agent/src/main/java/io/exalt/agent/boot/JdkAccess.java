package io.exalt.agent.boot;

import java.io.FileDescriptor;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Field;
import java.lang.reflect.Method;

/**
 * Reflective access to JDK internals the hooks need: the file position of a descriptor (through
 * {@code sun.nio.ch.FileDispatcherImpl.seek0}), its append flag, and the descriptor of a FileChannelImpl.
 * The agent opens {@code java.io} and {@code sun.nio.ch} to this (bootstrap, unnamed) module before use.
 */
final class JdkAccess {
    private static MethodHandle seek0;
    private static Field append;
    private static Field fdInt;
    private static Field channelFd;
    private static Class<?> fileChannelImpl;
    private static MethodHandle setUninterruptible;

    private JdkAccess() {
    }

    static synchronized void init() throws ReflectiveOperationException {
        if (seek0 != null) {
            return;
        }
        Class<?> fdi = Class.forName("sun.nio.ch.FileDispatcherImpl");
        Method m = fdi.getDeclaredMethod("seek0", FileDescriptor.class, long.class);
        m.setAccessible(true);
        seek0 = MethodHandles.lookup().unreflect(m).asType(MethodType.methodType(long.class, FileDescriptor.class, long.class));
        append = FileDescriptor.class.getDeclaredField("append");
        append.setAccessible(true);
        fdInt = FileDescriptor.class.getDeclaredField("fd");
        fdInt.setAccessible(true);
        fileChannelImpl = Class.forName("sun.nio.ch.FileChannelImpl");
        channelFd = fileChannelImpl.getDeclaredField("fd");
        channelFd.setAccessible(true);
        m = fileChannelImpl.getDeclaredMethod("setUninterruptible");
        m.setAccessible(true);
        setUninterruptible = MethodHandles.lookup().unreflect(m);
    }

    /**
     * Makes the agent's own FileChannel ignore thread interrupts, as the JDK does for its internal channels. Its reads
     * and writes run in application threads, on behalf of stream and RandomAccessFile calls that the JDK does not
     * interrupt; and the channel is shared by every handle of the file, so one interrupted thread closing it
     * (ClosedByInterruptException) made every other handle's reads and writes fail.
     */
    static void uninterruptible(java.nio.channels.FileChannel ch) {
        if (setUninterruptible == null || ch.getClass() != fileChannelImpl) {
            return; // not initialised (unit tests of CompressedFile without the agent)
        }
        try {
            setUninterruptible.invoke(ch);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** Current file position of the descriptor. */
    static long position(FileDescriptor fd) throws java.io.IOException {
        return seek(fd, -1);
    }

    static long seek(FileDescriptor fd, long pos) throws java.io.IOException {
        try {
            return (long) seek0.invokeExact(fd, pos);
        } catch (java.io.IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** The operating system's number for the descriptor, or -1 if unknown or closed. */
    static int fdNumber(FileDescriptor fd) {
        try {
            return fdInt == null ? -1 : fdInt.getInt(fd);
        } catch (IllegalAccessException e) {
            return -1;
        }
    }

    private static final boolean PROC_FD = java.nio.file.Files.isDirectory(java.nio.file.Paths.get("/proc/self/fd"));

    /** {@code /proc/self/fd/N} of an open descriptor (it names the open file, whatever its name now), or null. */
    static java.nio.file.Path procFd(FileDescriptor fd) {
        int n = PROC_FD ? fdNumber(fd) : -1;
        return n >= 0 ? java.nio.file.Paths.get("/proc/self/fd/" + n) : null;
    }

    static boolean isAppend(FileDescriptor fd) {
        try {
            return append.getBoolean(fd);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The descriptor of a FileChannelImpl, or null if {@code ch} is another kind of channel. */
    static FileDescriptor fdOf(Object ch) {
        if (ch == null || ch.getClass() != fileChannelImpl) {
            return null;
        }
        try {
            return (FileDescriptor) channelFd.get(ch);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
    }
}
