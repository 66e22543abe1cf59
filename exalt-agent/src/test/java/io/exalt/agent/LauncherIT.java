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
    void baseDirOptionBecomesTheAgentPrefix(@TempDir Path tmp) throws Exception {
        Path base = tmp.resolve("my cluster"); // a space, too: the launcher must quote it
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort(); // a free DataNode transfer port (not the shared default range)
        }
        ProcessBuilder pb = new ProcessBuilder(List.of("sh", new File("exalt").getAbsolutePath(), "hdfs", "--base-dir",
                base.toString(), "--port-base", "" + port, "--datanodes", "1", "--clients", "1", "--replication", "1",
                "--file-size", "1m", "--block-size", "1m", "--duration", "2", "--warmup", "0", "--interval", "1",
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
        assertTrue(Files.isRegularFile(tmp.resolve("out").resolve("launcher-it.csv")), out);
        assertTrue(out.contains("aggregate client throughput"), out); // the measurement ran
    }
}
