package io.exalt.agent;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
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
 * Starts child JVMs with the real (shaded) agent jar built by this module, then checks from outside (this JVM
 * has no agent, so it sees the physical files): emulated files use at least 1000x less disk than their logical
 * size, files outside the prefix are untouched, and a second agent JVM reads the first one's files back.
 */
class AgentFilesIT {
    static final int LEN = 32 * 1024 * 1024 + 5;
    static String agentJar;

    @BeforeAll
    static void findAgent() {
        agentJar = System.getProperty("exalt.agent.jar");
        assertTrue(agentJar != null && new File(agentJar).isFile(),
                "agent jar not found (" + agentJar + "); run 'mvn -pl exalt-agent verify' so it is packaged first");
    }

    static String classPath() throws Exception {
        return new File(ChildWorkload.class.getProtectionDomain().getCodeSource().getLocation().toURI()).getPath();
    }

    /** Runs a child JVM; returns {exitCode, stdout+stderr}. */
    static Object[] child(String agentArgs, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(System.getProperty("java.home") + "/bin/java", "-Xmx512m",
                "-XX:TieredStopAtLevel=1", "-javaagent:" + agentJar + "=" + agentArgs, "-cp", classPath(),
                ChildWorkload.class.getName()));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        byte[] out = p.getInputStream().readAllBytes();
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "child JVM timed out");
        return new Object[] {p.exitValue(), new String(out, StandardCharsets.UTF_8)};
    }

    static long allocatedBytes(Path f) throws Exception {
        Process p = new ProcessBuilder("stat", "-c", "%b %B", f.toString()).start();
        String[] s = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim().split(" ");
        p.waitFor();
        return Long.parseLong(s[0]) * Long.parseLong(s[1]);
    }

    @Test
    void filesUnderPrefixAreCompressedAndReadBackThroughEveryApi(@TempDir Path tmp) throws Exception {
        Path emu = Files.createDirectories(tmp.resolve("emulated"));
        Path outside = Files.createDirectories(tmp.resolve("outside"));
        Object[] r = child("prefix=" + emu, "write", emu.toString(), outside.toString(), "" + LEN);
        String out = (String) r[1];
        assertEquals(0, r[0], out);
        assertTrue(out.contains("self-check passed"), out);
        for (String n : new String[] {"fos", "raf", "channel", "transfer", "outside"}) {
            assertTrue(out.contains("VERIFIED " + n), "missing verification of " + n + ":\n" + out);
        }
        byte[] expected = ChildWorkload.expected(LEN);
        for (String n : new String[] {"fos", "raf", "channel", "transfer"}) {
            Path f = emu.resolve(n);
            assertEquals(LEN, Files.size(f), "apparent size is the logical size");
            long disk = allocatedBytes(f);
            assertTrue(disk * 1000 <= LEN, n + " uses " + disk + " bytes of disk for " + LEN + " logical bytes");
            byte[] phys = Files.readAllBytes(f);
            int nonZero = 0;
            for (int i = 0; i < ChildWorkload.PATCH_AT; i++) {
                nonZero += phys[i] != 0 ? 1 : 0;
            }
            assertEquals(0, nonZero, "no Tardis byte of " + n + " reached the disk (the region is a hole)");
            System.out.println(n + ": logical " + LEN + " B, disk " + disk + " B, ratio " + (LEN / Math.max(1, disk)));
            byte[] patchPhys = java.util.Arrays.copyOfRange(phys, ChildWorkload.PATCH_AT, ChildWorkload.PATCH_AT + ChildWorkload.PATCH_LEN);
            assertArrayEquals(ChildWorkload.patch(), patchPhys, "metadata is stored in place");
        }
        // outside the prefix: a plain file with every byte on disk
        assertArrayEquals(expected, Files.readAllBytes(outside.resolve("fos")));
        assertTrue(allocatedBytes(outside.resolve("fos")) >= LEN - 4096);

        // a second agent JVM reads what the first one wrote
        Object[] r2 = child("prefix=" + emu, "read", emu.toString(), "" + LEN);
        assertEquals(0, r2[0], (String) r2[1]);
        for (String n : new String[] {"fos", "raf", "channel", "transfer"}) {
            assertTrue(((String) r2[1]).contains("CROSS-VERIFIED " + n), (String) r2[1]);
        }
    }

    @Test
    void socketSelfCheckPassesWithPortsConfigured(@TempDir Path tmp) throws Exception {
        // the start-up self-check sends the probe over SocketChannel and Socket streams on a compressed port
        Object[] r = child("prefix=" + tmp + ",ports=40000-40010", "noop");
        String out = (String) r[1];
        assertEquals(0, r[0], out);
        assertTrue(out.contains("ports [40000-40010]") && out.contains("self-check passed"), out);
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("logical=(\\d+) wire=(\\d+)").matcher(out);
        assertTrue(m.find(), out);
        assertTrue(Long.parseLong(m.group(1)) > 100_000 && Long.parseLong(m.group(2)) * 50 < Long.parseLong(m.group(1)), out);
    }

    @Test
    void badOptionsStopTheJvmWithAClearMessage(@TempDir Path tmp) throws Exception {
        Object[] r = child("prefix=" + tmp + ",flag=0x12", "read", tmp.toString(), "1");
        assertNotEquals(0, r[0]);
        assertTrue(((String) r[1]).contains("16 hex digits"), (String) r[1]);
        Object[] r2 = child("prefx=/x", "read", tmp.toString(), "1");
        assertNotEquals(0, r2[0]);
        assertTrue(((String) r2[1]).contains("unknown Exalt agent option 'prefx'"), (String) r2[1]);
    }
}
