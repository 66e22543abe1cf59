package io.salus.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Predicate;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The protocol, Merkle, crypto and certificate packages must not depend on HBase or Hadoop, and only
 * {@code io.salus.core.zk} (and the HBase adapters) may use ZooKeeper or Curator.
 */
class ArchitectureTest {
    private static final Path ROOT = Path.of("src/main/java/io/salus/core");

    private static List<Path> offenders(Predicate<Path> scope, String... forbiddenImports) throws IOException {
        List<Path> sources;
        try (Stream<Path> files = Files.walk(ROOT)) {
            sources = files.filter(p -> p.toString().endsWith(".java")).filter(scope).toList();
        }
        assertTrue(sources.size() > 30, "expected the protocol sources under " + ROOT.toAbsolutePath());
        return sources.stream().filter(p -> {
            try {
                String s = Files.readString(p);
                return Stream.of(forbiddenImports).anyMatch(i -> s.contains("import " + i));
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        }).toList();
    }

    private static boolean under(Path p, String pkg) {
        return ROOT.relativize(p).startsWith(pkg);
    }

    @Test
    void protocolPackagesImportNoHBaseOrHadoop() throws IOException {
        assertEquals(List.of(), offenders(p -> !under(p, "hbase"), "org.apache.hadoop", "org.apache.hbase"));
    }

    /**
     * The HBase adapters ({@code io.salus.core.hbase}: table layout, master-side placement) are the only HBase code
     * in salus-core, and they depend on the protocol, never the other way round: no class outside the package
     * imports it, so the protocol stays usable (and testable) without HBase on the classpath.
     */
    @Test
    void nothingOutsideTheHBaseAdaptersImportsThem() throws IOException {
        assertEquals(List.of(), offenders(p -> !under(p, "hbase"), "io.salus.core.hbase"));
        try (Stream<Path> adapters = Files.list(ROOT.resolve("hbase"))) {
            assertTrue(adapters.anyMatch(p -> p.toString().endsWith("SalusTableLayout.java")),
                    "the HBase adapters live in io.salus.core.hbase");
        }
    }

    @Test
    void onlyTheZkPackageImportsZooKeeperOrCurator() throws IOException {
        assertEquals(List.of(), offenders(p -> !under(p, "hbase") && !under(p, "zk"), "org.apache.zookeeper",
                "org.apache.curator"));
    }

    /**
     * Unanimous consent is written once (issue 11): every place that turns three matching tentatives
     * into a combined certificate goes through {@code Tentatives.combineIfEnough}; no other main class
     * calls {@code Certificate.combine} itself (the client and the recovery orchestrator did).
     */
    @Test
    void threeMatchingTentativesAreCombinedOnlyInTentatives() throws IOException {
        List<Path> sources;
        try (Stream<Path> files = Files.walk(ROOT)) {
            sources = files.filter(p -> p.toString().endsWith(".java")).toList();
        }
        List<Path> combining = sources.stream().filter(p -> {
            try {
                return Files.readString(p).contains("Certificate.combine(");
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        }).map(p -> ROOT.relativize(p)).toList();
        assertEquals(List.of(Path.of("protocol/Tentatives.java")), combining);
    }
}
