package io.exalt.runner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code exalt capacity} end to end on a small namespace: a real NameNode (MiniDFSCluster, in this JVM) and
 * protocol-level DataNodes. Checks what the NameNode holds (every block complete with all its replicas, none
 * under-replicated, pending or corrupt), and that the measured heap per file is in a physically plausible range.
 */
class CapacityCommandTest {
    @Test
    void everyBlockIsCompleteWithAllReplicasAndTheHeapPerFileIsPlausible(@TempDir Path dir) throws Exception {
        StringWriter err = new StringWriter();
        CommandLine cl = new CommandLine(new ExaltCli());
        cl.setErr(new PrintWriter(err));
        int rc = cl.execute("capacity", "--steps", "1000,2500,4000", "--blocks-per-file", "1,3", "--datanodes", "4", "--threads", "2",
                "--files-per-dir", "500", "--base-dir", dir.resolve("base").toString(), "--out", dir.toString(), "--heap-gib", "1,2");
        assertEquals(0, rc, err.toString());
        List<String> rows = Files.readAllLines(dir.resolve("exalt-capacity.csv"));
        assertEquals(7, rows.size(), rows.toString());
        List<String> head = List.of(rows.get(0).split(","));
        for (String r : rows.subList(1, rows.size())) {
            String[] f = r.split(",");
            long k = Long.parseLong(f[head.indexOf("blocks_per_file")]);
            long files = Long.parseLong(f[head.indexOf("files")]);
            long blocks = Long.parseLong(f[head.indexOf("blocks")]);
            assertEquals(files * k, blocks, r);
            assertEquals(3 * blocks, Long.parseLong(f[head.indexOf("replicas")]), r);
            assertEquals("0", f[head.indexOf("low_redundancy")], r);
            assertEquals("0", f[head.indexOf("pending_reconstruction")], r);
            assertEquals("0", f[head.indexOf("corrupt")], r);
        }
        List<String> table = Files.readAllLines(dir.resolve("exalt-capacity-table41.csv"));
        for (String line : table) {
            if (line.startsWith("# blocks_per_file=")) {
                double slope = Double.parseDouble(line.replaceAll(".*slope_bytes_per_file=([0-9.]+).*", "$1"));
                // an INodeFile alone is 72 bytes and a BlockInfoContiguous 64 (compressed oops); a file cannot cost
                // less than ~150 bytes nor, with at most 3 blocks, several KiB
                assertTrue(slope > 150 && slope < 4000, line);
            }
        }
        assertEquals(2 + 1 + 1 + 2 + 1, table.size(), table.toString()); // header, 2 heap rows, costs, 2 fits, versions
        assertTrue(Files.size(dir.resolve("exalt-capacity.png")) > 0);
        assertTrue(Files.size(dir.resolve("exalt-capacity-table41.png")) > 0);
        assertTrue(Files.readAllLines(dir.resolve("exalt-capacity-classes.csv")).stream()
                .anyMatch(l -> l.contains("BlockInfoContiguous")), "class histogram names the NameNode's block objects");
    }

    @Test
    void badStepsAndTooFewDataNodesAreRefusedWithTheFix(@TempDir Path dir) {
        for (String[] args : new String[][] {{"--steps", "100,50"}, {"--datanodes", "2", "--replication", "3"}}) {
            StringWriter err = new StringWriter();
            CommandLine cl = new CommandLine(new ExaltCli());
            cl.setErr(new PrintWriter(err));
            String[] all = new String[args.length + 5];
            all[0] = "capacity";
            System.arraycopy(args, 0, all, 1, args.length);
            all[args.length + 1] = "--out";
            all[args.length + 2] = dir.toString();
            all[args.length + 3] = "--base-dir";
            all[args.length + 4] = dir.resolve("b").toString();
            assertTrue(cl.execute(all) != 0);
            assertTrue(err.toString().contains(args[0].equals("--steps") ? "--steps must increase" : "use --datanodes >= 3"),
                    err.toString());
        }
    }
}
