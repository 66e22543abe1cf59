package io.salus.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** The protocol, Merkle, crypto and certificate packages must not depend on HBase or Hadoop. */
class ArchitectureTest {
    @Test
    void protocolPackagesImportNoHBaseOrHadoop() throws IOException {
        Path root = Path.of("src/main/java/io/salus/core");
        List<Path> offenders;
        long checked;
        try (Stream<Path> files = Files.walk(root)) {
            List<Path> sources = files.filter(p -> p.toString().endsWith(".java"))
                    .filter(p -> !root.relativize(p).startsWith("hbase")).toList();
            checked = sources.size();
            offenders = sources.stream().filter(p -> {
                try {
                    String s = Files.readString(p);
                    return s.contains("import org.apache.hadoop") || s.contains("import org.apache.hbase")
                            || s.contains("import org.apache.zookeeper");
                } catch (IOException e) {
                    throw new IllegalStateException(e);
                }
            }).toList();
        }
        assertTrue(checked > 30, "expected the protocol sources under " + root.toAbsolutePath());
        assertEquals(List.of(), offenders);
    }
}
