package io.salus.blockdriver.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.salus.blockdriver.cli.SalusCli;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * The {@code salus} command tree with the launcher artifact on the class path (as {@code ./salus}
 * runs it): every documented sub-command is reachable, the launcher's commands arriving through
 * {@link SalusCli.Extension}.
 */
class LauncherCliTest {

  private record Run(int code, String out, String err) {
  }

  private static Run run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cli = SalusCli.commandLine();
    cli.setOut(new PrintWriter(out));
    cli.setErr(new PrintWriter(err));
    int code = SalusCli.execute(cli, args);
    return new Run(code, out.toString(), err.toString());
  }

  @Test
  void everyDocumentedSubcommandIsRegistered() {
    Set<String> names = SalusCli.commandLine().getSubcommands().keySet();
    for (String n : List.of("up", "status", "volume", "nbd", "witness", "digests", "help")) {
      assertTrue(names.contains(n), "salus " + n + " is documented but not registered: " + names);
    }
    Run help = run("--help");
    assertTrue(help.out().contains("digests")
        && !help.out().replaceAll("\\s+", " ").contains("not on this class path"),
        help.out());
  }

  @Test
  void digestsWithoutRequiredOptionsIsAUsageErrorNamingThem() {
    Run r = run("digests");
    assertEquals(2, r.code());
    assertTrue(r.err().contains("--dir") && r.err().contains("--trust"), r.err());
  }

  @Test
  void aBadSizeIsWordedTheSameByUpAndVolumeCreate() {
    Run up = run("up", "--size", "12Q");
    Run create = run("volume", "create", "v1", "--size", "12Q");
    assertEquals(2, up.code(), up.err());
    assertEquals(2, create.code(), create.err());
    String expected = "bad size '12Q': give a positive byte count, optionally with K, M, G or T"
        + " (e.g. 64M, 10G)";
    assertTrue(up.err().contains(expected), up.err());
    assertTrue(create.err().contains(expected), create.err());
  }

  @Test
  void aBadKindIsRefusedNamingBothKindsAndTouchesNothing(@org.junit.jupiter.api.io.TempDir java.nio.file.Path tmp)
      throws Exception {
    java.nio.file.Path data = tmp.resolve("never-created");
    java.io.ByteArrayOutputStream err = new java.io.ByteArrayOutputStream();
    java.io.PrintStream old = System.err;
    System.setErr(new java.io.PrintStream(err, true, java.nio.charset.StandardCharsets.UTF_8));
    Run r;
    try {
      r = run("up", "--data", data.toString(), "--kind", "ceph");
    } finally {
      System.setErr(old);
    }
    String msg = err.toString(java.nio.charset.StandardCharsets.UTF_8);
    assertEquals(2, r.code(), msg);
    assertTrue(msg.contains("bad --kind 'ceph'") && msg.contains("salus") && msg.contains("hbase"), msg);
    assertTrue(!java.nio.file.Files.exists(data), "a refused run creates no data directory");
  }
}
