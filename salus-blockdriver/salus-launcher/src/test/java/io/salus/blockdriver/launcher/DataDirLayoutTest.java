package io.salus.blockdriver.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DataDirLayoutTest {
  @TempDir Path tmp;

  @Test
  void freshDirectoryIsClaimedAtOnceAndPortsPersist() throws Exception {
    Path d = tmp.resolve("data");
    try (DataDirLayout l = DataDirLayout.open(d)) {
      assertTrue(l.isFresh());
      assertTrue(Files.exists(d.resolve(DataDirLayout.LAYOUT_FILE)), "layout written on open");
      assertFalse(l.hasPort("zookeeper"));
      l.recordPort("zookeeper", 4242);
      l.save();
    }
    try (DataDirLayout l = DataDirLayout.open(d)) {
      assertFalse(l.isFresh());
      assertEquals(4242, l.port("zookeeper", 1));
    }
  }

  @Test
  void secondOpenWhileLockedIsRefused() throws Exception {
    Path d = tmp.resolve("data");
    try (DataDirLayout l = DataDirLayout.open(d)) {
      LauncherException e = assertThrows(LauncherException.class, () -> DataDirLayout.open(d));
      assertTrue(e.getMessage().contains("in use by another running 'salus up'"), e.getMessage());
    }
    DataDirLayout.open(d).close(); // lock released on close
  }

  @Test
  void foreignOrIncompatibleDirectoriesAreRefusedUntouched() throws Exception {
    Path foreign = Files.createDirectories(tmp.resolve("foreign"));
    Files.writeString(foreign.resolve("x"), "keep");
    LauncherException e1 = assertThrows(LauncherException.class, () -> DataDirLayout.open(foreign));
    assertTrue(e1.getMessage().contains("not a salus data directory"), e1.getMessage());
    assertEquals("keep", Files.readString(foreign.resolve("x")));

    Path future = Files.createDirectories(tmp.resolve("future"));
    Files.writeString(future.resolve(DataDirLayout.LAYOUT_FILE), "layout.version=2\n");
    LauncherException e2 = assertThrows(LauncherException.class, () -> DataDirLayout.open(future));
    assertTrue(e2.getMessage().contains("layout version 2"), e2.getMessage());

    Path file = Files.writeString(tmp.resolve("plainfile"), "x");
    LauncherException e3 = assertThrows(LauncherException.class, () -> DataDirLayout.open(file));
    assertTrue(e3.getMessage().contains("is a file"), e3.getMessage());
  }

  @Test
  void readinessLineCarriesEveryAddress() {
    var p = new java.util.Properties();
    p.setProperty("zookeeper.quorum", "127.0.0.1:1");
    p.setProperty("hdfs.namenode", "hdfs://127.0.0.1:2");
    p.setProperty("hbase.master", "localhost:3");
    p.setProperty("witnesses", "127.0.0.1:4,127.0.0.1:5");
    p.setProperty("nbd.uri", "nbd://127.0.0.1:6/demo");
    p.setProperty("data", "/d");
    String line = ReadinessLine.format(p);
    assertTrue(line.startsWith(ReadinessLine.PREFIX + " "));
    for (String s : new String[] {"zookeeper=127.0.0.1:1", "namenode=hdfs://127.0.0.1:2",
        "hbase-master=localhost:3", "witnesses=127.0.0.1:4,127.0.0.1:5",
        "nbd=nbd://127.0.0.1:6/demo", "nbdinfo nbd://127.0.0.1:6/demo", "status --data /d"}) {
      assertTrue(line.contains(s), s + " in " + line);
    }
    assertFalse(line.contains("\n"));
  }
}
