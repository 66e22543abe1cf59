package io.salus.blockdriver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.function.Predicate;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The block driver is the client: {@code salus nbd} / {@code salus volume} run on salus-core and
 * the HBase client alone. The embedded cluster, server tools and benchmarks are the nested
 * launcher artifact ({@code salus-blockdriver/salus-launcher}). And the packages depend one way:
 * {@code cli → nbd → volume → tree}; the volume layer knows nothing of NBD, the CLI or the launcher.
 */
class ClientClasspathTest {
  private static final Path SRC = Path.of("src/main/java/io/salus/blockdriver");

  /** Jars that carry HBase/HDFS server code or test code (where the mini clusters live). */
  private static final Pattern SERVER_OR_TEST_JAR = Pattern.compile(
      ".*/(hbase-server|hbase-testing-util|hbase-asyncfs|hbase-procedure|hbase-http|hbase-replication"
          + "|hadoop-hdfs|hadoop-minicluster|hadoop-yarn-[a-z-]+|hadoop-mapreduce-[a-z-]+|salus-hdfs"
          + "|salus-launcher|junit)-\\d[^/]*\\.jar|.*-tests\\.jar");

  /**
   * {@code target/runtime-classpath.txt} is written by the dependency plugin
   * ({@code build-classpath}, runtime scope) before the tests run; it is what
   * {@code target/lib} (the client distribution) is copied from.
   */
  @Test
  void runtimeClassPathHasTheHBaseClientButNoServerJarsOrTestJars() throws IOException {
    Path file = Path.of("target/runtime-classpath.txt");
    assertTrue(Files.exists(file), file.toAbsolutePath() + " is written by the pom's"
        + " dependency:build-classpath (generate-test-resources); run the tests through Maven");
    List<String> entries = Arrays.stream(Files.readString(file).strip().split(File.pathSeparator))
        .map(e -> e.replace(File.separatorChar, '/')).toList();
    assertTrue(entries.stream().anyMatch(e -> e.matches(".*/hbase-client-[^/]*\\.jar")),
        "the HBase client must be on the runtime class path: " + entries);
    assertTrue(entries.stream().anyMatch(e -> e.contains("salus-core")), entries.toString());
    List<String> bad = entries.stream().filter(e -> SERVER_OR_TEST_JAR.matcher(e).matches()).toList();
    assertEquals(List.of(), bad, "server jars or test-jars on the client's runtime class path");
  }

  /** The client's sources use no mini cluster, HBase server, HDFS or salus-hdfs class. */
  @Test
  void clientSourcesImportNoServerClasses() throws IOException {
    assertEquals(List.of(), offenders(p -> true, "org.apache.hadoop.hbase.HBaseTestingUtility",
        "org.apache.hadoop.hbase.MiniHBaseCluster", "org.apache.hadoop.hbase.StartMiniClusterOption",
        "org.apache.hadoop.hbase.master.", "org.apache.hadoop.hbase.regionserver.HRegion",
        "org.apache.hadoop.hdfs.", "io.salus.hdfs.", "io.salus.blockdriver.launcher",
        "io.salus.blockdriver.bench"));
  }

  /** {@code volume} (and {@code tree}) never import {@code nbd}, {@code cli} or the launcher. */
  @Test
  void volumeAndTreeDoNotDependOnNbdOrCli() throws IOException {
    assertEquals(List.of(), offenders(p -> under(p, "volume") || under(p, "tree"),
        "io.salus.blockdriver.nbd", "io.salus.blockdriver.cli"));
  }

  /** {@code nbd} serves volumes; it does not reach up into the CLI. */
  @Test
  void nbdDoesNotDependOnCli() throws IOException {
    assertEquals(List.of(), offenders(p -> under(p, "nbd"), "io.salus.blockdriver.cli"));
  }

  private static boolean under(Path p, String pkg) {
    return SRC.relativize(p).startsWith(pkg);
  }

  private static List<String> offenders(Predicate<Path> scope, String... forbidden)
      throws IOException {
    List<Path> sources;
    try (Stream<Path> files = Files.walk(SRC)) {
      sources = files.filter(p -> p.toString().endsWith(".java")).filter(scope).toList();
    }
    assertTrue(sources.size() > 3, "expected sources under " + SRC.toAbsolutePath());
    return sources.stream().filter(p -> {
      try {
        String s = Files.readString(p);
        // imports and fully qualified uses alike
        return Stream.of(forbidden).anyMatch(s::contains);
      } catch (IOException e) {
        throw new IllegalStateException(e);
      }
    }).map(p -> SRC.relativize(p).toString()).sorted().toList();
  }
}
