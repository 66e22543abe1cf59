package io.salus.blockdriver.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * The benchmark driver's argument handling only (no cluster is started: every case is refused before anything
 * runs). The benchmark itself is run by hand; no test asserts a timing.
 */
class SalusVsHBaseBenchmarkTest {

  private record Run(int code, String out, String err) {
  }

  private static Run run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cli = new CommandLine(new SalusVsHBaseBenchmark());
    cli.setOut(new PrintWriter(out));
    cli.setErr(new PrintWriter(err));
    int code = cli.execute(args);
    return new Run(code, out.toString(), err.toString());
  }

  @Test
  void helpNamesEveryOption() {
    Run r = run("--help");
    assertEquals(0, r.code());
    for (String opt : new String[] {"--out", "--runtime", "--working-set", "--volume-size", "--scratch", "--jfr"}) {
      assertTrue(r.out().contains(opt), opt + " missing from --help: " + r.out());
    }
  }

  @Test
  void badValuesAreRefusedWithTheFix(@TempDir Path tmp) {
    Run r = run("--scratch", tmp.resolve("s").toString(), "--runtime", "0", "--working-set", "512M",
        "--volume-size", "256M", "--blocks-per-region", "1000");
    assertEquals(2, r.code(), r.err());
    assertTrue(r.err().contains("--runtime 0 is not valid: give at least 1"), r.err());
    assertTrue(r.err().contains("is larger than --volume-size 268435456: make the volume at least as large"),
        r.err());
    assertTrue(r.err().contains("--blocks-per-region 1000 is not valid: give a power of two"), r.err());
    assertTrue(!Files.exists(tmp.resolve("s")), "nothing is created for refused options");
  }

  @Test
  void aBadSizeIsWordedAsElsewhere() {
    Run r = run("--working-set", "12Q");
    assertEquals(2, r.code(), r.err());
    assertTrue(r.err().contains("bad size '12Q'"), r.err());
  }

  @Test
  void aScratchDirectoryItDidNotMakeIsNeverEmptied(@TempDir Path tmp) throws Exception {
    Path precious = tmp.resolve("precious.txt");
    Files.writeString(precious, "keep me");
    Run r = run("--scratch", tmp.toString(), "--out", tmp.resolve("out").toString());
    assertEquals(2, r.code(), r.err());
    assertTrue(r.err().contains("is not empty and was not made by this benchmark"), r.err());
    assertEquals("keep me", Files.readString(precious));
  }
}
