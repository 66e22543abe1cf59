package io.exalt.agent;

import static net.bytebuddy.matcher.ElementMatchers.isConstructor;
import static net.bytebuddy.matcher.ElementMatchers.named;
import static net.bytebuddy.matcher.ElementMatchers.takesArgument;
import static net.bytebuddy.matcher.ElementMatchers.takesArguments;

import io.exalt.agent.boot.ExaltRuntime;
import io.exalt.agent.boot.FileHooks;
import java.io.File;
import java.io.InputStream;
import java.lang.instrument.Instrumentation;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.jar.JarFile;
import net.bytebuddy.agent.builder.AgentBuilder;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.asm.AsmVisitorWrapper;
import net.bytebuddy.description.method.MethodDescription;
import net.bytebuddy.description.type.TypeDescription;
import net.bytebuddy.dynamic.DynamicType;
import net.bytebuddy.matcher.ElementMatcher;
import net.bytebuddy.matcher.ElementMatchers;
import net.bytebuddy.utility.JavaModule;

/**
 * The Exalt Java agent: {@code -javaagent:exalt-agent.jar=prefix=/data/dn,ports=9866}.
 *
 * <p>Start-up: put the helper jar (embedded as {@code io/exalt/agent/exalt-boot.jar}) on the bootstrap class
 * path, let {@code java.base} read it and open {@code java.io}/{@code sun.nio.ch} to it, retransform the JDK
 * I/O classes with ByteBuddy advice, and run {@link SelfCheck}. If any hook is missing the agent throws, which
 * makes the JVM refuse to start: a missing hook would silently write or read wrong bytes.
 */
public final class ExaltAgent {
    /** Types the agent must transform, and what it hooks in them. */
    static final List<String> FILE_TYPES = List.of("java.io.FileOutputStream", "java.io.FileInputStream",
            "java.io.RandomAccessFile", "sun.nio.ch.FileChannelImpl", "java.io.File", "java.nio.file.Files",
            "java.nio.channels.AsynchronousFileChannel", "sun.nio.fs.UnixFileAttributeViews$Basic");
    static final List<String> SOCKET_TYPES = List.of("sun.nio.ch.NioSocketImpl", "sun.nio.ch.SocketChannelImpl",
            "java.nio.channels.spi.AbstractInterruptibleChannel");

    private static volatile boolean installed;

    private ExaltAgent() {
    }

    public static void premain(String args, Instrumentation inst) throws Exception {
        install(args, inst);
    }

    public static void agentmain(String args, Instrumentation inst) throws Exception {
        install(args, inst);
    }

    static synchronized void install(String args, Instrumentation inst) throws Exception {
        if (installed) {
            return;
        }
        AgentOptions o = AgentOptions.parse(args);
        appendBootJar(o, inst);
        Module base = Object.class.getModule();
        Module helpers = FileHooks.class.getModule();
        if (FileHooks.class.getClassLoader() != null) {
            throw new IllegalStateException("Exalt: helper classes were loaded by " + FileHooks.class.getClassLoader()
                    + " instead of the bootstrap loader; do not put the Exalt boot jar on the class path");
        }
        inst.redefineModule(base, Set.of(helpers), Map.of(),
                Map.of("java.io", Set.of(helpers), "sun.nio.ch", Set.of(helpers), "java.net", Set.of(helpers),
                        "sun.nio.fs", Set.of(helpers)),
                Set.of(), Map.of());
        ExaltRuntime.configure(o.prefixes, o.ports, new io.exalt.tardis.TardisFormat(o.flag), o.indexLimit, o.verbose);
        ExaltRuntime.setRunCheck(io.exalt.tardis.TardisCompressor.RunCheck.parse(o.runCheck));
        if (o.runCheck.equals("sampled-unsafe")) {
            System.err.println("[exalt] WARNING runcheck=sampled-unsafe: Tardis runs are sampled, not verified; bytes an"
                    + " application changes in place inside a run are LOST (replaced by the original Tardis bytes)");
        }
        FileHooks.init();
        Set<String> transformed = Collections.synchronizedSet(new LinkedHashSet<>());
        Set<String> errors = Collections.synchronizedSet(new LinkedHashSet<>());
        AgentBuilder b = new AgentBuilder.Default()
                .disableClassFormatChanges()
                .with(AgentBuilder.RedefinitionStrategy.RETRANSFORMATION)
                .with(AgentBuilder.InitializationStrategy.NoOp.INSTANCE)
                .with(AgentBuilder.TypeStrategy.Default.REDEFINE)
                .ignore(ElementMatchers.nameStartsWith("net.bytebuddy.").or(ElementMatchers.nameStartsWith("io.exalt.")))
                .with(new AgentBuilder.Listener.Adapter() {
                    @Override
                    public void onTransformation(TypeDescription td, ClassLoader cl, JavaModule m, boolean loaded, DynamicType dt) {
                        transformed.add(td.getName());
                    }

                    @Override
                    public void onError(String typeName, ClassLoader cl, JavaModule m, boolean loaded, Throwable t) {
                        errors.add(typeName + ": " + t);
                    }
                });
        b = fileHooks(b);
        if (!o.ports.isEmpty()) {
            io.exalt.agent.boot.SocketHooks.init();
            b = SocketAdvice.hooks(b);
        }
        // load every target class now, so that the check below sees all of them transformed
        for (String t : FILE_TYPES) {
            Class.forName(t, false, null);
        }
        b.installOn(inst);
        Set<String> expected = new LinkedHashSet<>(FILE_TYPES);
        if (!o.ports.isEmpty()) {
            expected.addAll(SOCKET_TYPES);
        }
        expected.removeAll(transformed);
        if (!errors.isEmpty() || !expected.isEmpty()) {
            throw new IllegalStateException("Exalt agent refuses to run: hooks missing for " + expected + ", errors " + errors
                    + ". Running without them would silently corrupt emulated data. Use JDK 17 (tested: 17.0.x).");
        }
        if (o.selfCheck) {
            SelfCheck.run(!o.ports.isEmpty());
        }
        installed = true;
        System.err.println("[exalt] agent active: prefixes " + ExaltRuntime.prefixes() + ", ports " + describePorts(o)
                + ", flag 0x" + Long.toHexString(o.flag) + (o.selfCheck ? ", self-check passed" : ", self-check skipped"));
    }

    private static String describePorts(AgentOptions o) {
        StringBuilder s = new StringBuilder("[");
        for (int[] r : o.ports) {
            s.append(s.length() > 1 ? ", " : "").append(r[0] == r[1] ? "" + r[0] : r[0] + "-" + r[1]);
        }
        return s.append(']').toString();
    }

    private static void appendBootJar(AgentOptions o, Instrumentation inst) throws Exception {
        Path jar;
        if (o.bootJar != null) {
            jar = Path.of(o.bootJar);
            if (!Files.isRegularFile(jar)) {
                throw new IllegalArgumentException("Exalt bootjar=" + o.bootJar + " does not exist");
            }
        } else {
            try (InputStream in = ExaltAgent.class.getResourceAsStream("exalt-boot.jar")) {
                if (in == null) {
                    throw new IllegalStateException("Exalt agent jar has no embedded io/exalt/agent/exalt-boot.jar; use the"
                            + " exalt-agent-*-agent.jar built by Maven, or pass bootjar=<path to exalt-agent-*-boot.jar>");
                }
                jar = Files.createTempFile("exalt-boot", ".jar");
                Files.copy(in, jar, StandardCopyOption.REPLACE_EXISTING);
                jar.toFile().deleteOnExit();
            }
        }
        inst.appendToBootstrapClassLoaderSearch(new JarFile(jar.toFile()));
    }

    static ElementMatcher.Junction<MethodDescription> m(String name, Class<?>... args) {
        return named(name).and(takesArguments(args));
    }

    static AgentBuilder.Transformer advice(Object... pairs) {
        return (builder, td, cl, module, pd) -> {
            DynamicType.Builder<?> bb = builder;
            for (int i = 0; i < pairs.length; i += 2) {
                @SuppressWarnings("unchecked")
                ElementMatcher<? super MethodDescription> mm = (ElementMatcher<? super MethodDescription>) pairs[i + 1];
                AsmVisitorWrapper w = Advice.to((Class<?>) pairs[i]).on(mm);
                bb = bb.visit(w);
            }
            return bb;
        };
    }

    private static AgentBuilder fileHooks(AgentBuilder b) {
        return b
                .type(named("java.io.FileOutputStream")).transform(advice(
                        FileAdvice.OpenWrite.class, isConstructor().and(takesArguments(File.class, boolean.class)),
                        FileAdvice.Write1.class, m("write", int.class),
                        FileAdvice.WriteArray.class, m("write", byte[].class),
                        FileAdvice.WriteRange.class, m("write", byte[].class, int.class, int.class),
                        FileAdvice.Close.class, m("close")))
                .type(named("java.io.FileInputStream")).transform(advice(
                        FileAdvice.OpenRead.class, isConstructor().and(takesArguments(File.class)),
                        FileAdvice.Read1.class, m("read"),
                        FileAdvice.ReadArray.class, m("read", byte[].class),
                        FileAdvice.ReadRange.class, m("read", byte[].class, int.class, int.class),
                        FileAdvice.ReadAll.class, m("readAllBytes"),
                        FileAdvice.ReadN.class, m("readNBytes", int.class),
                        FileAdvice.Close.class, m("close")))
                .type(named("java.io.RandomAccessFile")).transform(advice(
                        FileAdvice.OpenRaf.class, isConstructor().and(takesArgument(0, File.class)).and(takesArgument(1, String.class)),
                        FileAdvice.Read1.class, m("read"),
                        FileAdvice.ReadArray.class, m("read", byte[].class),
                        FileAdvice.ReadRange.class, m("read", byte[].class, int.class, int.class),
                        FileAdvice.RafWrite1.class, m("write", int.class),
                        FileAdvice.RafWriteArray.class, m("write", byte[].class),
                        FileAdvice.RafWriteRange.class, m("write", byte[].class, int.class, int.class),
                        FileAdvice.RafWriteBytesString.class, m("writeBytes", String.class),
                        FileAdvice.RafWriteCharsString.class, m("writeChars", String.class),
                        FileAdvice.Close.class, m("close")))
                .type(named("sun.nio.ch.FileChannelImpl")).transform(advice(
                        FileAdvice.OpenChannel.class, isConstructor(),
                        FileAdvice.ChRead.class, m("read", ByteBuffer.class),
                        FileAdvice.ChReadAt.class, m("read", ByteBuffer.class, long.class),
                        FileAdvice.ChReadV.class, m("read", ByteBuffer[].class, int.class, int.class),
                        FileAdvice.ChWrite.class, m("write", ByteBuffer.class),
                        FileAdvice.ChWriteAt.class, m("write", ByteBuffer.class, long.class),
                        FileAdvice.ChWriteV.class, m("write", ByteBuffer[].class, int.class, int.class),
                        FileAdvice.TransferTo.class, m("transferTo", long.class, long.class, WritableByteChannel.class),
                        FileAdvice.TransferFrom.class, m("transferFrom", ReadableByteChannel.class, long.class, long.class),
                        FileAdvice.Map.class, m("map", FileChannel.MapMode.class, long.class, long.class),
                        FileAdvice.Force.class, m("force", boolean.class),
                        FileAdvice.Truncate.class, named("truncate").and(takesArguments(long.class))
                                .and(ElementMatchers.returns(FileChannel.class)),
                        FileAdvice.Close.class, m("implCloseChannel")))
                .type(named("java.io.File")).transform(advice(
                        FileAdvice.RenameTo.class, m("renameTo", File.class),
                        FileAdvice.SetLastModified.class, m("setLastModified", long.class)))
                .type(named("java.nio.file.Files")).transform(advice(
                        FileAdvice.FilesMove.class, named("move").and(takesArguments(3)),
                        FileAdvice.FilesSetLastModifiedTime.class, named("setLastModifiedTime").and(takesArguments(2)),
                        FileAdvice.FilesCopy.class, named("copy").and(takesArguments(Path.class, Path.class,
                                java.nio.file.CopyOption[].class))))
                .type(named("sun.nio.fs.UnixFileAttributeViews$Basic")).transform(advice(
                        FileAdvice.BasicSetTimes.class, m("setTimes", java.nio.file.attribute.FileTime.class,
                                java.nio.file.attribute.FileTime.class, java.nio.file.attribute.FileTime.class)))
                .type(named("java.nio.channels.AsynchronousFileChannel")).transform(advice(
                        FileAdvice.AsyncOpen.class, named("open").and(takesArguments(4)).and(takesArgument(0, Path.class))));
    }
}
