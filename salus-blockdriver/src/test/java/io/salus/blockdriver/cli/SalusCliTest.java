package io.salus.blockdriver.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** The {@code salus} command tree: every documented sub-command is reachable. */
class SalusCliTest {

  @Test
  void everyDocumentedSubcommandIsRegistered() {
    CommandLine cli = new CommandLine(new SalusCli());
    Set<String> names = cli.getSubcommands().keySet();
    for (String n : List.of("up", "status", "volume", "nbd", "witness", "digests", "help")) {
      assertTrue(names.contains(n), "salus " + n + " is documented but not registered: " + names);
    }
  }

  @Test
  void digestsWithoutRequiredOptionsIsAUsageErrorNamingThem() {
    CommandLine cli = new CommandLine(new SalusCli());
    StringWriter err = new StringWriter();
    cli.setErr(new PrintWriter(err));
    int code = cli.execute("digests");
    assertEquals(2, code);
    assertTrue(err.toString().contains("--dir") && err.toString().contains("--trust"), err.toString());
  }
}
