package io.exalt.runner;

import java.io.File;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/**
 * Options every runner command shares (a picocli {@code @Mixin}): where the cluster lives and where CSV/PNG go.
 * {@code --base-dir} is also read by the launcher (exalt-agent/exalt), which derives the agent's {@code prefix=} from it.
 */
final class RunnerOptions {
    @Option(names = "--base-dir", description = "Cluster directory (default: system property exalt.base or /tmp/exalt-hdfs); emulated DataNodes keep their data in its data/ subdirectory, which must be an agent prefix.")
    File baseDir;

    @Option(names = "--out", defaultValue = "docs/benchmarks", description = "Directory for CSV and PNG (default ${DEFAULT-VALUE}).")
    Path out;

    /** {@code --base-dir}, else the launcher's {@code -Dexalt.base}, else /tmp/exalt-hdfs. */
    File base() {
        return baseDir != null ? baseDir : new File(System.getProperty("exalt.base", "/tmp/exalt-hdfs"));
    }

    /** {@code --port-base} of the commands that start emulated DataNodes (a separate mixin: not every command has ports). */
    static final class Ports {
        @Option(names = "--port-base", description = "DataNode i uses data-transfer port port-base+i; must be in the agent's ports= (default: system property exalt.portBase or 30000).")
        Integer portBase;

        /** {@code --port-base}, else the launcher's {@code -Dexalt.portBase}, else 30000. */
        int portBase() {
            return portBase != null ? portBase : Integer.getInteger("exalt.portBase", 30000);
        }
    }

    /** {@code --warmup} of the commands that run a load before measuring. */
    static final class Warmup {
        @Option(names = "--warmup", defaultValue = "10", description = "Seconds of load before measuring (default ${DEFAULT-VALUE}).")
        int warmup;
    }
}
