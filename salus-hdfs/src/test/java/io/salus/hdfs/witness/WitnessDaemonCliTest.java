package io.salus.hdfs.witness;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import io.salus.core.cert.RegionId;
import io.salus.core.crypto.SignatureScheme;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Command-line behaviour of {@code salus witness} that returns without serving. */
class WitnessDaemonCliTest {
  @TempDir
  Path tmp;

  private static String captureErr(Runnable r) {
    PrintStream old = System.err;
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    System.setErr(new PrintStream(b, true, StandardCharsets.UTF_8));
    try {
      r.run();
    } finally {
      System.setErr(old);
    }
    return b.toString(StandardCharsets.UTF_8);
  }

  @Test
  void helpAndBadArgumentsAndCorruptJournal() throws Exception {
    assertEquals(0, WitnessDaemon.run("--help"));
    String[] code = new String[1];
    String err = captureErr(() -> code[0] = "" + WitnessDaemon.run("--port", "1"));
    assertEquals("2", code[0]);
    assertTrue(err.contains("--dir"), err);

    Path trust = tmp.resolve("bad-trust.conf");
    Files.writeString(trust, "scheme rot13\n");
    err = captureErr(() -> code[0] = "" + WitnessDaemon.run("--dir", tmp.resolve("w").toString(),
        "--port", "0", "--trust", trust.toString()));
    assertEquals("2", code[0]);
    assertTrue(err.contains("bad-trust.conf:1") && err.contains("unknown scheme"), err);

    // A journal with a flipped byte in the middle: exit code 3 and the fix in the message.
    Path dir = tmp.resolve("c");
    Certs certs = new Certs(SignatureScheme.WEAK_CRC32C);
    RegionId r = new RegionId("v", 0);
    try (DurableCertificateStore s = DurableCertificateStore.open(dir)) {
      for (int i = 0; i < 10; i++) {
        s.putIfAbsent(r, 0, i, certs.logEntry(Certs.entry(r, 0, i)));
      }
    }
    Path seg;
    try (var l = Files.list(dir)) {
      seg = l.filter(p -> p.getFileName().toString().startsWith("journal-")).findFirst()
          .orElseThrow();
    }
    DurableCertificateStoreTest.flip(seg, Files.size(seg) / 3);
    err = captureErr(() -> code[0] = "" + WitnessDaemon.run("--dir", dir.toString(), "--port",
        "0"));
    assertEquals("3", code[0]);
    assertTrue(err.contains("corrupt at byte offset") && err.contains("--repair"), err);
  }
}
