package io.exalt.agent;

import static io.exalt.agent.ExaltAgent.advice;
import static io.exalt.agent.ExaltAgent.m;
import static net.bytebuddy.matcher.ElementMatchers.named;

import io.exalt.agent.boot.SocketHooks;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import net.bytebuddy.agent.builder.AgentBuilder;
import net.bytebuddy.asm.Advice;

/** Advice inlined into {@code SocketChannelImpl} and {@code NioSocketImpl}; see {@link SocketHooks}. */
final class SocketAdvice {
    private SocketAdvice() {
    }

    static AgentBuilder hooks(AgentBuilder b) {
        return b
                .type(named("sun.nio.ch.SocketChannelImpl")).transform(advice(
                        ChRead.class, m("read", ByteBuffer.class),
                        ChReadV.class, m("read", ByteBuffer[].class, int.class, int.class),
                        ChWrite.class, m("write", ByteBuffer.class),
                        ChWriteV.class, m("write", ByteBuffer[].class, int.class, int.class),
                        BlockingRead.class, m("blockingRead", byte[].class, int.class, int.class, long.class),
                        BlockingWrite.class, m("blockingWriteFully", byte[].class, int.class, int.class),
                        ImplAvailable.class, m("available"),
                        ConfigureBlocking.class, m("implConfigureBlocking", boolean.class),
                        ShutdownOutput.class, m("shutdownOutput")))
                .type(named("java.nio.channels.spi.AbstractInterruptibleChannel")).transform(advice(
                        ChannelClose.class, m("close")))
                .type(named("sun.nio.ch.NioSocketImpl")).transform(advice(
                        ImplRead.class, m("read", byte[].class, int.class, int.class),
                        ImplWrite.class, m("write", byte[].class, int.class, int.class),
                        ImplAvailable.class, m("available")));
    }

    static final class ChRead {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static Integer enter(@Advice.This SocketChannel self, @Advice.Argument(0) ByteBuffer dst) throws Exception {
            return SocketHooks.chRead(self, dst);
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
        static Long enter(@Advice.This SocketChannel self, @Advice.Argument(0) ByteBuffer[] dsts, @Advice.Argument(1) int off,
                @Advice.Argument(2) int len) throws Exception {
            return SocketHooks.chReadV(self, dsts, off, len);
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
        static Integer enter(@Advice.This SocketChannel self, @Advice.Argument(0) ByteBuffer src) throws Exception {
            return SocketHooks.chWrite(self, src);
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
        static Long enter(@Advice.This SocketChannel self, @Advice.Argument(0) ByteBuffer[] srcs, @Advice.Argument(1) int off,
                @Advice.Argument(2) int len) throws Exception {
            return SocketHooks.chWriteV(self, srcs, off, len);
        }

        @Advice.OnMethodExit
        static void exit(@Advice.Enter Long r, @Advice.Return(readOnly = false) long ret) {
            if (r != null) {
                ret = r;
            }
        }
    }

    static final class BlockingRead {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static Integer enter(@Advice.This SocketChannel self, @Advice.Argument(0) byte[] b, @Advice.Argument(1) int off,
                @Advice.Argument(2) int len, @Advice.Argument(3) long nanos) throws Exception {
            return SocketHooks.blockingRead(self, b, off, len, nanos);
        }

        @Advice.OnMethodExit
        static void exit(@Advice.Enter Integer r, @Advice.Return(readOnly = false) int ret) {
            if (r != null) {
                ret = r;
            }
        }
    }

    static final class BlockingWrite {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static boolean enter(@Advice.This SocketChannel self, @Advice.Argument(0) byte[] b, @Advice.Argument(1) int off,
                @Advice.Argument(2) int len) throws Exception {
            return SocketHooks.blockingWrite(self, b, off, len);
        }
    }

    static final class ImplRead {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static Integer enter(@Advice.This Object self, @Advice.Argument(0) byte[] b, @Advice.Argument(1) int off,
                @Advice.Argument(2) int len) throws Exception {
            return SocketHooks.implRead(self, b, off, len);
        }

        @Advice.OnMethodExit
        static void exit(@Advice.Enter Integer r, @Advice.Return(readOnly = false) int ret) {
            if (r != null) {
                ret = r;
            }
        }
    }

    static final class ImplWrite {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static boolean enter(@Advice.This Object self, @Advice.Argument(0) byte[] b, @Advice.Argument(1) int off,
                @Advice.Argument(2) int len) throws Exception {
            return SocketHooks.implWrite(self, b, off, len);
        }
    }

    /** Before a switch to blocking mode: pending frame bytes of a non-blocking write go out first. */
    static final class ConfigureBlocking {
        @Advice.OnMethodEnter
        static void enter(@Advice.This SocketChannel self, @Advice.Argument(0) boolean block) throws Exception {
            SocketHooks.beforeBlockingMode(self, block);
        }
    }

    /**
     * shutdownOutput(): with pending frame bytes of a non-blocking write, the shutdown is done by the agent once they are
     * out (the kernel sends its queue before the FIN); the original runs now only when nothing is pending.
     */
    static final class ShutdownOutput {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static boolean enter(@Advice.This SocketChannel self) throws Exception {
            return SocketHooks.shutdownOutput(self);
        }

        @Advice.OnMethodExit
        static void exit(@Advice.This SocketChannel self, @Advice.Enter boolean deferred,
                @Advice.Return(readOnly = false) SocketChannel ret) {
            if (deferred) {
                ret = self;
            }
        }
    }

    /** Before close() of any channel: a compressed SocketChannel sends its pending frame bytes first. */
    static final class ChannelClose {
        @Advice.OnMethodEnter
        static void enter(@Advice.This Object self) {
            if (self instanceof SocketChannel) {
                SocketHooks.beforeClose((SocketChannel) self);
            }
        }
    }

    static final class ImplAvailable {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static Integer enter(@Advice.This Object self) throws Exception {
            return SocketHooks.implAvailable(self);
        }

        @Advice.OnMethodExit
        static void exit(@Advice.Enter Integer r, @Advice.Return(readOnly = false) int ret) {
            if (r != null) {
                ret = r;
            }
        }
    }
}
