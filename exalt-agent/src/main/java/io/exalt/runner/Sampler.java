package io.exalt.runner;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import javax.management.MBeanServer;
import javax.management.ObjectName;

/** Samples process CPU/heap and the NameNode's RPC metrics (JMX: Hadoop:service=NameNode,name=RpcActivityForPort*). */
final class Sampler {
    private final com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    private final MemoryMXBean mem = ManagementFactory.getMemoryMXBean();
    private final MBeanServer mbs = ManagementFactory.getPlatformMBeanServer();
    private final ObjectName rpc;
    private long lastCpu;
    private long lastWall;

    Sampler(int nnPort) throws Exception {
        rpc = new ObjectName("Hadoop:service=NameNode,name=RpcActivityForPort" + nnPort);
        lastCpu = os.getProcessCpuTime();
        lastWall = System.nanoTime();
    }

    /** CPU used by this JVM since the last call, in cores (1.0 = one core busy). */
    double cpuCores() {
        long c = os.getProcessCpuTime();
        long w = System.nanoTime();
        double r = (c - lastCpu) / (double) Math.max(1, w - lastWall);
        lastCpu = c;
        lastWall = w;
        return r;
    }

    double heapMb() {
        return mem.getHeapMemoryUsage().getUsed() / 1048576.0;
    }

    double rpc(String attr) {
        try {
            Object v = mbs.getAttribute(rpc, attr);
            return v instanceof Number ? ((Number) v).doubleValue() : Double.NaN;
        } catch (Exception e) {
            return Double.NaN;
        }
    }

    static long diskUsage(java.io.File dir) {
        try {
            Process p = new ProcessBuilder("du", "-s", "-B1", dir.getPath()).redirectErrorStream(true).start();
            String s = new String(p.getInputStream().readAllBytes()).trim();
            p.waitFor();
            return Long.parseLong(s.split("\\s+")[0]);
        } catch (Exception e) {
            return -1;
        }
    }
}
