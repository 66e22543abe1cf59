package io.exalt.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Hostile and unsupported cases through the real (shaded) agent in one child JVM ({@link ChildHostile}); each
 * test checks the lines of its own cases. The child prints {@code OK name} / {@code FAIL name: why}.
 */
class AgentHostileIT {
    @TempDir
    static Path tmp;
    static String out;
    static int exit;
    static Path emu;
    static Path outside;

    @BeforeAll
    static void runChild() throws Exception {
        String agentJar = System.getProperty("exalt.agent.jar");
        assertTrue(agentJar != null && new File(agentJar).isFile(), "agent jar not found (" + agentJar + ")");
        emu = Files.createDirectories(tmp.resolve("emulated"));
        outside = Files.createDirectories(tmp.resolve("outside"));
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        List<String> cmd = new ArrayList<>(List.of(System.getProperty("java.home") + "/bin/java", "-Xmx512m",
                "-XX:TieredStopAtLevel=1", "-javaagent:" + agentJar + "=prefix=" + emu + ",ports=" + port, "-cp",
                AgentFilesIT.classPath(), ChildHostile.class.getName(), emu.toString(), outside.toString(), "" + port));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        byte[] o = p.getInputStream().readAllBytes();
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "child JVM timed out");
        out = new String(o, StandardCharsets.UTF_8);
        exit = p.exitValue();
        System.out.println(out);
    }

    static void ok(String name) {
        assertEquals(0, exit, out);
        assertTrue(out.contains("\nOK " + name + "\n") || out.startsWith("OK " + name + "\n"), name + " did not pass:\n" + out);
    }

    @Test
    void randomAccessFileWriteBytesAndWriteCharsOverARunAreKept() {
        ok("raf-writeBytes-writeChars");
    }

    @Test
    void symlinkOutsideThePrefixPointingInsideIsEmulated() throws Exception {
        ok("symlink-outside-into-prefix");
        // written through outside/dir-link/via-link: stored compressed under the prefix (a hole, not 1 MiB)
        assertTrue(AgentFilesIT.allocatedBytes(emu.resolve("via-link")) < 64 * 1024,
                "via-link allocates " + AgentFilesIT.allocatedBytes(emu.resolve("via-link")));
    }

    @Test
    void asynchronousFileChannelOnAnEmulatedFileIsRefusedLoudly() {
        ok("async-channel-refused");
    }

    @Test
    void filesCopyOfAnEmulatedFileCopiesTheLogicalBytes() throws Exception {
        ok("files-copy");
        // outside the prefix the copy is a plain file with every byte (readable without the agent)
        byte[] t = new byte[ChildHostile.MIB];
        new io.exalt.tardis.TardisGenerator(t.length).fill(0, t, 0, t.length);
        org.junit.jupiter.api.Assertions.assertArrayEquals(t, Files.readAllBytes(outside.resolve("copy-out")));
    }

    @Test
    void shrinkThenExtendWithTheNativeSetLengthFailsLoudly() {
        ok("shrink-then-extend-refused");
    }

    @Test
    void oneMibWriteWithTenBytesOverwrittenRoundTripsThroughFilesAndSockets() throws Exception {
        for (String n : new String[] {"mutated-fos", "mutated-raf", "mutated-channel", "mutated-socket"}) {
            ok(n);
        }
        // seen from outside (no agent): the 10 changed bytes are on disk, the rest of the file is a hole
        // Bytes 500,004..500,012 overwrite the flag of the unit at 500,004, so that unit can only be metadata and
        // must be on disk. (Byte 500,003 is the low marker byte of the unit before it: flag + forged marker is
        // itself a valid one-unit run, which the index records losslessly, so it need not be on disk.)
        byte[] logical = ChildHostile.mutatedMib();
        byte[] original = new byte[ChildHostile.MIB];
        new io.exalt.tardis.TardisGenerator(1L << 30).fill(0, original, 0, original.length);
        for (String n : new String[] {"mutated-fos", "mutated-raf", "mutated-channel"}) {
            byte[] phys = Files.readAllBytes(emu.resolve(n));
            int changed = 0;
            for (int i = 500_004; i < 500_013; i++) {
                if (logical[i] != original[i]) {
                    changed++;
                    assertEquals(logical[i], phys[i], n + ": changed byte " + i + " is stored on disk");
                }
            }
            assertTrue(changed >= 8, "the workload really changed the bytes: " + changed);
        }
    }
}
