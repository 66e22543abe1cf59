package io.salus.it.nbd;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** Runs the real NBD clients (libnbd-bin, qemu-utils, fio, fuse3, e2fsprogs) as processes. */
public final class Tools {
  private Tools() {}

  /** Exit code and combined output of a finished command. */
  public record Result(int exit, String output) {
    public Result requireSuccess(String what) {
      if (exit != 0) {
        throw new AssertionError(what + " failed with exit " + exit + ":\n" + output);
      }
      return this;
    }
  }

  public static Result run(long timeoutSeconds, String... cmd) throws Exception {
    return run(timeoutSeconds, List.of(cmd));
  }

  public static Result run(long timeoutSeconds, List<String> cmd) throws Exception {
    File log = File.createTempFile("tool", ".log");
    try {
      ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
          .redirectOutput(log);
      Map<String, String> env = pb.environment();
      env.put("PATH", "/usr/bin:/usr/sbin:/bin:/sbin:" + env.getOrDefault("PATH", ""));
      env.put("LIBNBD_DEBUG", "0");
      Process p = pb.start();
      if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
        // fio runs its job in a child process: kill the whole tree, or the job goes on loading the server
        p.descendants().forEach(ProcessHandle::destroyForcibly);
        p.destroyForcibly();
        p.waitFor(10, TimeUnit.SECONDS);
        throw new AssertionError(String.join(" ", cmd) + " timed out after " + timeoutSeconds
            + " s:\n" + Files.readString(log.toPath(), StandardCharsets.UTF_8));
      }
      return new Result(p.exitValue(), Files.readString(log.toPath(), StandardCharsets.UTF_8));
    } finally {
      log.delete();
    }
  }

  /** Starts a long-running process (nbdfuse) in the background. */
  public static Process start(String... cmd) throws IOException {
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.DISCARD);
    pb.environment().put("PATH", "/usr/bin:/usr/sbin:/bin:/sbin:"
        + pb.environment().getOrDefault("PATH", ""));
    return pb.start();
  }

  /** fio over NBD: writes with crc32c verification data, then reads and verifies. */
  public static void fioVerify(String uri, String rw, String size, int iodepth) throws Exception {
    List<String> cmd = new ArrayList<>(List.of("fio", "--name=verify-" + rw, "--ioengine=nbd",
        "--uri=" + uri, "--rw=" + rw, "--bs=4k", "--iodepth=" + iodepth, "--size=" + size,
        "--verify=crc32c", "--do_verify=1", "--verify_fatal=1", "--randrepeat=1",
        "--verify_state_save=0",
        "--output-format=terse"));
    run(300, cmd).requireSuccess("fio " + rw + " verify on " + uri);
  }

  /**
   * nbdfuse exposes the export as MNT/nbd; waits until the file appears with the right size.
   */
  public static Process nbdfuse(File fuseDir, String uri, long size) throws Exception {
    fuseDir.mkdirs();
    Process p = start("nbdfuse", fuseDir.getAbsolutePath(), uri);
    File f = new File(fuseDir, "nbd");
    long deadline = System.currentTimeMillis() + 30_000;
    while (System.currentTimeMillis() < deadline) {
      if (!p.isAlive()) {
        throw new AssertionError("nbdfuse exited with " + p.exitValue());
      }
      if (f.exists() && f.length() == size) {
        return p;
      }
      Thread.sleep(100);
    }
    p.destroy();
    throw new AssertionError("nbdfuse did not expose " + f + " within 30 s");
  }

  public static void unmountFuse(File fuseDir, Process p) throws Exception {
    run(30, "fusermount3", "-u", fuseDir.getAbsolutePath());
    if (!p.waitFor(30, TimeUnit.SECONDS)) {
      p.destroy();
      p.waitFor(10, TimeUnit.SECONDS);
    }
  }
}
