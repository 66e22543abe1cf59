package io.salus.it.launcher;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A command started through {@code ./salus} by a shell that ignores SIGINT (what a background job
 * of a non-interactive shell inherits) still stops on {@code kill -INT}: the script restores the
 * default disposition, which the JVM cannot do for itself. Uses {@code salus witness}, the
 * cheapest long-running subcommand, on the reactor's classes (SALUS_CLASSPATH).
 */
class SalusScriptSignalTest {
  @TempDir Path tmp;

  @Test
  void sigintStopsACommandStartedWithSigintIgnored() throws Exception {
    Path root = Path.of(System.getProperty("salus.repo.root", "..")).toAbsolutePath().normalize();
    String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    ProcessBuilder pb = new ProcessBuilder("bash", "-c",
        "trap '' INT; exec \"$0\" witness --dir \"$1\" --port 0",
        root.resolve("salus").toString(), tmp.resolve("w").toString());
    pb.environment().put("SALUS_SKIP_BUILD", "1");
    pb.environment().put("SALUS_CLASSPATH", cp);
    pb.environment().put("SALUS_HEAP", "256m");
    pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
    pb.environment().put("PATH", Path.of(System.getProperty("java.home"), "bin") + ":"
        + System.getenv("PATH"));
    pb.redirectErrorStream(true);
    Process p = pb.start();
    try {
      BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(),
          StandardCharsets.UTF_8));
      StringBuilder seen = new StringBuilder();
      String line;
      while ((line = out.readLine()) != null) {
        seen.append(line).append('\n');
        if (line.contains("listening on")) {
          break;
        }
      }
      assertTrue(seen.toString().contains("listening on"), "witness did not start:\n" + seen);
      new ProcessBuilder("kill", "-INT", Long.toString(p.pid())).start().waitFor();
      // The bound only guards against a hang: an ignored SIGINT would leave it running forever.
      assertTrue(p.waitFor(120, TimeUnit.SECONDS), "kill -INT did not stop it:\n" + seen);
    } finally {
      p.destroyForcibly();
    }
  }
}
