package io.exalt.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The launcher script {@code exalt-agent/exalt} with {@code hdfs --base-dir DIR}: the agent's prefix must follow
 * the chosen directory (it used to stay at the default and the runner stopped with a stack trace). Runs a real
 * NameNode and one emulated DataNode for a couple of seconds.
 */
class LauncherIT {
    @Test
    void aBaseDirThatHdfsCannotUseIsRefusedWithAClearMessage(@TempDir Path tmp) throws Exception {
        // a space: the launcher must quote it for the agent, and HDFS DataNodes cannot use it (they never register)
        ProcessBuilder pb = new ProcessBuilder(List.of("sh", new File("exalt").getAbsolutePath(), "hdfs", "--base-dir",
                tmp.resolve("my cluster").toString(), "--port-base", "29900", "--datanodes", "1"));
        pb.environment().put("EXALT_HEAP", "256m");
        pb.redirectErrorStream(true);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "launcher timed out");
        assertTrue(p.exitValue() != 0, out);
        assertTrue(out.contains("agent active: prefixes [" + tmp.resolve("my cluster").resolve("data") + "/]"), out);
        assertTrue(out.contains("contains whitespace") && out.contains("--base-dir without spaces"), out);
    }

    @Test
    void baseDirOptionBecomesTheAgentPrefix(@TempDir Path tmp) throws Exception {
        Path base = tmp.resolve("my-cluster");
        // a free DataNode transfer port below the ephemeral range (a compressed port inside it could be picked as the
        // local port of an RPC connection), and not the shared default range 30000-30999
        int port = 0;
        for (int p = 20000 + new java.util.Random().nextInt(9000); port == 0; p++) {
            try (ServerSocket s = new ServerSocket(p)) {
                port = p;
            } catch (java.io.IOException busy) {
                // try the next one
            }
        }
        ProcessBuilder pb = new ProcessBuilder(List.of("sh", new File("exalt").getAbsolutePath(), "hdfs", "--base-dir",
                base.toString(), "--port-base", "" + port, "--datanodes", "1", "--clients", "1", "--replication", "1",
                "--file-size", "1m", "--block-size", "1m", "--duration", "2", "--warmup", "0", "--interval", "1",
                "--min-files-per-client", "1", "--max-duration", "120",
                "--out", tmp.resolve("out").toString(), "--name", "launcher-it"));
        pb.environment().put("EXALT_HEAP", "768m");
        pb.environment().remove("EXALT_BASE");
        pb.environment().remove("EXALT_PORTS");
        pb.redirectErrorStream(true);
        Process p = pb.start();
        byte[] o = p.getInputStream().readAllBytes();
        assertTrue(p.waitFor(300, TimeUnit.SECONDS), "launcher timed out");
        String out = new String(o, StandardCharsets.UTF_8);
        assertEquals(0, p.exitValue(), out);
        assertTrue(out.contains("agent active: prefixes [" + base.resolve("data") + "/]"), out);
        assertFalse(out.contains("Exception in thread"), out);
        assertTrue(out.contains("; errors 0"), out); // every client write succeeded
        assertTrue(Files.isRegularFile(tmp.resolve("out").resolve("launcher-it.csv")), out);
        assertTrue(out.contains("aggregate client throughput"), out); // the measurement ran
    }
}
