package io.salus.it.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code salus up} refuses a bad environment before it touches any state, and says what to do.
 */
class LauncherBadInputTest {
  @TempDir Path tmp;

  private static String run(int expectedExit, String heap, String... args) throws Exception {
    try (LauncherProcess p = LauncherProcess.start(heap, args)) {
      int code = p.waitForExit(120, TimeUnit.SECONDS);
      assertEquals(expectedExit, code, p.output());
      return p.output();
    }
  }

  @Test
  void portInUseIsNamedWithTheOptionToChangeIt() throws Exception {
    try (ServerSocket busy = new ServerSocket()) {
      busy.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0));
      int port = busy.getLocalPort();
      Path data = tmp.resolve("d1");
      String out = run(2, "3g", "up", "--data", data.toString(), "--zk-port", Integer.toString(port),
          "--namenode-port", "0", "--skip-memory-check");
      assertTrue(out.contains("port " + port) && out.contains("already in use") && out.contains("--zk-port"), out);
      // Refused before anything started: the new data directory is not left behind.
      assertTrue(Files.notExists(data), "a refused run left " + data + " behind");
    }
  }

  @Test
  void incompatibleLayoutIsRefusedAndLeftAlone() throws Exception {
    Path data = Files.createDirectories(tmp.resolve("d2"));
    Files.writeString(data.resolve("salus-layout.properties"), "layout.version=99\n");
    String out = run(2, "3g", "up", "--data", data.toString(), "--skip-memory-check");
    assertTrue(out.contains("layout version 99") && out.contains("another --data"), out);
    assertEquals("layout.version=99\n", Files.readString(data.resolve("salus-layout.properties")));
  }

  @Test
  void foreignNonEmptyDirectoryIsRefused() throws Exception {
    Path data = Files.createDirectories(tmp.resolve("d3"));
    Files.writeString(data.resolve("precious.txt"), "user data");
    String out = run(2, "3g", "up", "--data", data.toString(), "--skip-memory-check");
    assertTrue(out.contains("not a salus data directory"), out);
    assertEquals("user data", Files.readString(data.resolve("precious.txt")));
  }

  @Test
  void tooLittleHeapIsRefusedWithTheFix() throws Exception {
    String out = run(2, "256m", "up", "--data", tmp.resolve("d4").toString());
    assertTrue(out.contains("heap") && out.contains("SALUS_HEAP"), out);
    assertTrue(Files.notExists(tmp.resolve("d4")), "a refused run left its data directory behind");
  }
}
