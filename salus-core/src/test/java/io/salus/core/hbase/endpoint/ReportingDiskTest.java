package io.salus.core.hbase.endpoint;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.core.protocol.replica.InMemoryReplicaDisk;
import io.salus.core.protocol.replica.ReplicaDisk;
import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * The region server wraps every replica's disk to report failed writes ({@code ReplicaHost.ReportingDisk}). A wrapper
 * that does not forward a method gets the interface's default instead of the disk's own: after the merge of tasks
 * tput18 (FLUSH/FUA sync, commit marks hflushed) and disk18 (the wrapper), the wrapper inherited a no-op {@code sync},
 * so every FLUSH was answered without an hsync. These tests fail on that code.
 */
class ReportingDiskTest {
    static ReplicaDisk wrap(ReplicaDisk d, Consumer<RuntimeException> failed) throws Exception {
        Class<?> c = Class.forName(ReplicaHost.class.getName() + "$ReportingDisk");
        Constructor<?> k = c.getDeclaredConstructor(ReplicaDisk.class, Consumer.class);
        k.setAccessible(true);
        return (ReplicaDisk) k.newInstance(d, failed);
    }

    /** The default value of a type: zero or false for a primitive, else null. */
    static Object zero(Class<?> t) {
        return t.isPrimitive() && t != void.class ? java.lang.reflect.Array.get(java.lang.reflect.Array.newInstance(t, 1), 0)
                : null;
    }

    @Test
    void theWrapperForwardsEveryMethodOfTheDisk() throws Exception {
        // every ReplicaDisk method called on the wrapper must reach the wrapped disk (none may fall back to the
        // interface's default, as sync did after the merge of tput18 and disk18)
        List<String> reached = new ArrayList<>();
        ReplicaDisk recording = (ReplicaDisk) java.lang.reflect.Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {ReplicaDisk.class}, (proxy, m, args) -> {
                    reached.add(m.getName());
                    Class<?> r = m.getReturnType();
                    return r == List.class ? List.of() : zero(r);
                });
        ReplicaDisk w = wrap(recording, e -> { });
        List<String> missing = new ArrayList<>();
        for (Method m : ReplicaDisk.class.getMethods()) {
            if (java.lang.reflect.Modifier.isStatic(m.getModifiers())) {
                continue;
            }
            Object[] args = new Object[m.getParameterCount()];
            for (int i = 0; i < args.length; i++) {
                args[i] = zero(m.getParameterTypes()[i]);
            }
            reached.clear();
            m.invoke(w, args);
            if (!reached.equals(List.of(m.getName()))) {
                missing.add(m.getName() + " reached " + reached);
            }
        }
        assertEquals(List.of(), missing, "ReportingDisk must forward these ReplicaDisk methods to the disk it wraps");
    }

    @Test
    void syncReachesTheDiskAndAFailedSyncIsReported() throws Exception {
        InMemoryReplicaDisk mem = new InMemoryReplicaDisk();
        AtomicInteger reported = new AtomicInteger();
        ReplicaDisk d = wrap(mem, e -> reported.incrementAndGet());
        d.append(0, 0, new byte[] {1});
        d.sync(0);
        assertEquals(1, mem.syncs(), "the wrapped disk synced");
        ReplicaDisk broken = wrap(new InMemoryReplicaDisk() {
            @Override
            public void sync(long generation) {
                throw new IllegalStateException("disk gone");
            }
        }, e -> reported.incrementAndGet());
        assertThrows(IllegalStateException.class, () -> broken.sync(0));
        assertEquals(1, reported.get(), "a failed sync is reported like a failed log write");
    }
}
