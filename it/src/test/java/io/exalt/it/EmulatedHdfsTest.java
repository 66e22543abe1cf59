package io.exalt.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A real MiniDFSCluster (NameNode + 3 DataNodes) in a child JVM running the Exalt agent with the DataNodes'
 * data directories as prefix: a 1 GiB Tardis file, replicated 3 times (3 GiB of block data), is stored and
 * returned byte for byte while the data directories use less than 10 MiB of disk.
 */
class EmulatedHdfsTest {
    static final long GIB = 1L << 30;

    @Test
    void oneGibFileOnEmulatedDataNodesUsesUnderTenMib(@TempDir Path tmp) throws Exception {
        File base = tmp.resolve("dfs").toFile();
        File data = new File(base, "data");
        assertTrue(data.mkdirs());
        int port = ExaltChildJvm.freePortRange(3);
        Object[] r = ExaltChildJvm.run("prefix=" + data.getAbsolutePath() + ",ports=" + port + "-" + (port + 2), "1g", 420,
                EmulatedHdfsMain.class, base.getAbsolutePath(), "" + GIB, "" + port);
        String out = (String) r[1];
        assertEquals(0, r[0], out);
        assertTrue(out.contains("self-check passed"), out);
        assertTrue(out.contains("RESULT written=" + GIB), out);
        assertTrue(out.contains("RESULT verified=" + GIB), out);
        assertTrue(out.contains("RESULT pread=true"), out);
        assertTrue(out.contains("RESULT replicas=3"), out);
        java.util.regex.Matcher net = java.util.regex.Pattern.compile("netLogical=(\\d+) netWire=(\\d+)").matcher(out);
        assertTrue(net.find(), out);
        long logical = Long.parseLong(net.group(1));
        long wire = Long.parseLong(net.group(2));
        assertTrue(logical >= 3 * GIB, "block data crossed the compressed DataNode ports: " + logical);
        assertTrue(wire * 50 < logical, "wire bytes " + wire + " for " + logical + " logical bytes");
        long disk = ExaltChildJvm.diskUsage(data);
        long total = ExaltChildJvm.diskUsage(base);
        System.out.println(out.lines().filter(l -> l.startsWith("RESULT")).reduce("", (x, y) -> x + y + "\n")
                + "data dirs on disk: " + disk + " B, whole cluster dir: " + total + " B, logical block data: " + 3 * GIB + " B");
        assertTrue(disk < 10L << 20, "DataNode data directories use " + disk + " bytes");
    }
}
