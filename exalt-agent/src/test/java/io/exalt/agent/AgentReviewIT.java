package io.exalt.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Review findings through the real (shaded) agent in one child JVM ({@link ChildReview}): concurrent writers,
 * renames and ".." through symlinks, socket writes over the frame limit. Each test fails on the code before its fix.
 */
class AgentReviewIT {
    @TempDir
    static Path tmp;
    static String out;
    static int exit;

    static int port() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    @BeforeAll
    static void runChild() throws Exception {
        String agentJar = System.getProperty("exalt.agent.jar");
        assertTrue(agentJar != null && new File(agentJar).isFile(), "agent jar not found (" + agentJar + ")");
        Path emu = Files.createDirectories(tmp.resolve("emulated"));
        Path outside = Files.createDirectories(tmp.resolve("outside"));
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        List<String> cmd = List.of(System.getProperty("java.home") + "/bin/java", "-Xmx1500m", "-XX:TieredStopAtLevel=1",
                "-javaagent:" + agentJar + "=prefix=" + emu + ",ports=" + port, "-cp", AgentFilesIT.classPath(),
                ChildReview.class.getName(), emu.toString(), outside.toString(), "" + port);
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        byte[] o = p.getInputStream().readAllBytes();
        assertTrue(p.waitFor(180, TimeUnit.SECONDS), "child JVM timed out");
        out = new String(o, StandardCharsets.UTF_8);
        exit = p.exitValue();
        System.out.println(out);
    }

    static void ok(String name) {
        assertEquals(0, exit, out);
        assertTrue(out.contains("\nOK " + name + "\n") || out.startsWith("OK " + name + "\n"), name + " did not pass:\n" + out);
    }

    /** Two FileOutputStreams in append mode: both took the same end of file, one record overwrote the other. */
    @Test
    void concurrentAppendersLoseNoRecord() {
        ok("concurrent-appenders");
    }

    @Test
    void concurrentFilesWriteAppendLosesNoRecord() {
        ok("concurrent-files-write-append");
    }

    /** One FileChannel, two threads: position read, write and seek were three steps, so writes landed on each other. */
    @Test
    void sharedChannelTwoWritersLoseNoRecord() {
        ok("shared-channel-two-writers");
    }

    @Test
    void sharedStreamTwoWritersLoseNoRecord() {
        ok("shared-stream-two-writers");
    }

    /** The rename hook compared the symlinked path with the real path: the index was no longer saved (wrong bytes later). */
    @Test
    void renameThroughASymlinkedDirectoryKeepsSavingTheIndex() {
        ok("rename-through-symlinked-dir");
    }

    /**
     * The index and the seal were written by path: after a rename the agent did not see (the file system provider,
     * another process) every later index update was dropped and the file read back wrong bytes after close.
     */
    @Test
    void unhookedRenameThroughTheProviderKeepsSavingTheIndex() {
        ok("unhooked-rename-provider-move");
    }

    @Test
    void renameByAnotherProcessKeepsSavingTheIndex() {
        ok("unhooked-rename-other-process");
    }

    /** A read-write re-open went by the old name, i.e. to whatever file had it now. */
    @Test
    void reopenForWritingAfterAnUnhookedRenameStaysOnTheSameFile() {
        ok("reopen-after-unhooked-rename");
    }

    /** "link/.." was normalised lexically, so the file was opened unemulated and the agent then refused it. */
    @Test
    void dotDotAfterASymlinkIsResolvedAsTheKernelDoes() {
        ok("dotdot-after-symlink");
    }

    /** One write of more than 64 MiB became one frame that the reader refused ("bad frame length"). */
    @Test
    void socketWriteOverTheFrameLimitArrivesWhole() {
        ok("socket-write-over-64mib");
    }

    /** Socket.getInputStream().available() counted only decoded bytes: a reader polling it waited forever. */
    @Test
    void socketAvailableSeesDataArriveAndCountsReceivedBytes() {
        ok("socket-available");
    }

    /** The stream of a channel socket used the unhooked SocketChannelImpl.available (raw, framed bytes). */
    @Test
    void channelSocketAvailableCountsReceivedBytes() {
        ok("channel-socket-available");
    }

    /**
     * A non-blocking SocketChannel.write on a compressed port waits (select loop, no limit) until the whole frame is
     * out: with a peer that stops reading, the writer blocks forever instead of returning a partial count, so the
     * application's write timeout (Hadoop SocketIOWithTimeout) never fires and the thread hangs.
     */
    @Test
    void nonBlockingWriteToAPeerThatStopsReadingReturns() throws Exception {
        String agentJar = System.getProperty("exalt.agent.jar");
        Path emu = Files.createDirectories(tmp.resolve("emulated-nb"));
        int port = port();
        List<String> cmd = List.of(System.getProperty("java.home") + "/bin/java", "-Xmx512m", "-XX:TieredStopAtLevel=1",
                "-javaagent:" + agentJar + "=prefix=" + emu + ",ports=" + port, "-cp", AgentFilesIT.classPath(),
                ChildReview.class.getName(), emu.toString(), emu.toString(), "" + port, "nonblocking-writer");
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        byte[] o = p.getInputStream().readAllBytes();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "child JVM timed out");
        String s = new String(o, StandardCharsets.UTF_8);
        System.out.println(s);
        assertTrue(s.contains("OK nonblocking-writer-peer-not-reading"), s);
        // the rest of a frame the agent holds after a partial write still arrives: when the writer only waits for a
        // reply, switches to blocking mode, retries after select, or closes right after its last write
        assertTrue(s.contains("OK nonblocking-partial-frames-arrive"), s);
    }

    /**
     * FileChannel.map(READ_ONLY) of a range with Tardis runs returns a private copy (/dev/shm) of the logical bytes at
     * map time; the JDK's mapping is shared, so a later write through the channel must show through it. Through the
     * agent the mapping keeps the old bytes, silently.
     */
    @Test
    void readOnlyMappingSeesLaterWrites() {
        ok("readonly-map-sees-later-writes");
    }

    /** A read-write mapping materialised its range, but a later Tardis write through the channel went to the index. */
    @Test
    void readWriteMappingSeesLaterTardisWrites() {
        ok("readwrite-map-sees-later-tardis-writes");
    }

    /** Only the mapped range stays uncompressed: writes elsewhere in the file still compress. */
    @Test
    void mappingKeepsOtherRangesCompressed() {
        ok("map-keeps-other-ranges-compressed");
    }

    /**
     * Emulation was decided by path only, but the compressed form (holes + index xattr) belongs to the inode: a hard
     * link from outside every prefix, a file renamed out of the prefix, or moved to another file system read its
     * Tardis runs as zeros, silently.
     */
    @Test
    void hardLinkOutsideThePrefixReadsTheLogicalBytes() {
        ok("hardlink-outside-prefix");
    }

    @Test
    void fileRenamedOutOfThePrefixReadsTheLogicalBytes() {
        ok("renamed-out-of-prefix");
    }

    @Test
    void fileMovedToAnotherFileSystemReadsTheLogicalBytes() {
        ok("moved-to-another-file-system");
    }
}
