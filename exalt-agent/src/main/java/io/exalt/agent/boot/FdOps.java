package io.exalt.agent.boot;

import java.io.IOException;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.file.attribute.FileTime;

/**
 * Metadata calls on an open descriptor instead of a path: {@code fstat} (size and modification time in one call)
 * and {@code fsetxattr} (the index). The path-based calls the agent made per write (a {@code stat} of
 * {@code /proc/self/fd/N} before and after it, and {@code open + fsetxattr + close} of that path for the index,
 * each building {@code Path} objects) cost three procfs path lookups, two more system calls and garbage per block
 * file write. Reached through the JDK's own {@code sun.nio.fs} dispatcher (opened to the agent's module); where
 * that is not available (another OS or JDK) {@link #available()} is false and callers keep the path-based calls.
 */
final class FdOps {
    private static final MethodHandle GET; // UnixFileAttributes.get(int fd): fstat
    private static final MethodHandle SIZE;
    private static final MethodHandle MTIME;
    private static final MethodHandle FSETXATTR; // (Unix|Linux)NativeDispatcher.fsetxattr(int, byte[], long address, int)
    private static final MethodHandle ADDRESS; // sun.nio.ch.DirectBuffer.address()
    private static final boolean OK;
    /** Why the descriptor calls are not used (null if they are). */
    static final String WHY_NOT;

    static {
        MethodHandle get = null;
        MethodHandle size = null;
        MethodHandle mtime = null;
        MethodHandle set = null;
        MethodHandle addr = null;
        boolean ok = false;
        String why = null;
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            Class<?> attrs = Class.forName("sun.nio.fs.UnixFileAttributes");
            Method m = attrs.getDeclaredMethod("get", int.class);
            m.setAccessible(true);
            get = l.unreflect(m).asType(MethodType.methodType(Object.class, int.class));
            m = attrs.getDeclaredMethod("size");
            m.setAccessible(true);
            size = l.unreflect(m).asType(MethodType.methodType(long.class, Object.class));
            m = attrs.getDeclaredMethod("lastModifiedTime");
            m.setAccessible(true);
            mtime = l.unreflect(m).asType(MethodType.methodType(FileTime.class, Object.class));
            try { // JDK 17 updates: UnixNativeDispatcher; earlier builds: LinuxNativeDispatcher
                m = Class.forName("sun.nio.fs.UnixNativeDispatcher").getDeclaredMethod("fsetxattr", int.class, byte[].class,
                        long.class, int.class);
            } catch (NoSuchMethodException e) {
                m = Class.forName("sun.nio.fs.LinuxNativeDispatcher").getDeclaredMethod("fsetxattr", int.class, byte[].class,
                        long.class, int.class);
            }
            m.setAccessible(true);
            set = l.unreflect(m);
            m = Class.forName("sun.nio.ch.DirectBuffer").getMethod("address");
            m.setAccessible(true);
            addr = l.unreflect(m).asType(MethodType.methodType(long.class, Object.class));
            ok = !Boolean.getBoolean("exalt.noFdOps");
            why = ok ? null : "-Dexalt.noFdOps=true";
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            ok = false;
            why = e.toString();
        }
        WHY_NOT = why;
        GET = get;
        SIZE = size;
        MTIME = mtime;
        FSETXATTR = set;
        ADDRESS = addr;
        OK = ok;
    }

    private FdOps() {
    }

    static boolean available() {
        return OK;
    }

    /** One {@code fstat} of descriptor {@code fd}: its size, and its modification time into {@code mtime[0]}. */
    static long fstat(int fd, FileTime[] mtime) throws IOException {
        try {
            Object a = GET.invokeExact(fd);
            mtime[0] = (FileTime) MTIME.invokeExact(a);
            return (long) SIZE.invokeExact(a);
        } catch (Throwable t) {
            throw io("fstat", t);
        }
    }

    /**
     * {@code fsetxattr(fd, name, value)}; {@code scratch}: a direct buffer of at least {@code value.length} bytes
     * that the caller owns (copied into, then passed by address).
     */
    static void fsetxattr(int fd, byte[] name, byte[] value, ByteBuffer scratch) throws IOException {
        scratch.clear();
        scratch.put(value);
        try {
            long address = (long) ADDRESS.invokeExact((Object) scratch);
            FSETXATTR.invokeExact(fd, name, address, value.length);
        } catch (Throwable t) {
            throw io("fsetxattr", t);
        } finally {
            java.lang.ref.Reference.reachabilityFence(scratch);
        }
    }

    private static IOException io(String call, Throwable t) {
        if (t instanceof IOException) {
            return (IOException) t;
        }
        if (t instanceof RuntimeException) {
            throw (RuntimeException) t;
        }
        if (t instanceof Error) {
            throw (Error) t;
        }
        return new IOException("Exalt: " + call + " failed: " + t.getMessage(), t); // UnixException: errno message
    }
}
