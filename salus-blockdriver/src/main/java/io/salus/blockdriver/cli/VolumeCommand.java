package io.salus.blockdriver.cli;

import io.salus.blockdriver.volume.BlockGeometry;
import io.salus.blockdriver.volume.VolumeCatalog;
import io.salus.blockdriver.volume.VolumeException;
import io.salus.blockdriver.volume.VolumeInfo;
import java.io.File;
import java.io.PrintWriter;
import java.util.List;
import java.util.concurrent.Callable;
import org.apache.hadoop.hbase.client.Connection;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code salus volume create|list|delete|describe}: the volume catalog of a cluster. */
@Command(name = "volume", mixinStandardHelpOptions = true,
    description = "Create, list, describe and delete volumes in an HBase cluster.",
    subcommands = {VolumeCommand.Create.class, VolumeCommand.ListVolumes.class,
        VolumeCommand.Describe.class, VolumeCommand.Delete.class})
public final class VolumeCommand implements Runnable {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }

  /** Shared options and error handling. */
  abstract static class Base implements Callable<Integer> {
    @Option(names = "--hbase-conf", paramLabel = "DIR",
        description = "Directory with the cluster's hbase-site.xml (default: classpath).")
    File hbaseConf;

    @CommandLine.Spec CommandLine.Model.CommandSpec spec;

    abstract int run(VolumeCatalog catalog, PrintWriter out) throws Exception;

    @Override
    public Integer call() {
      PrintWriter err = spec.commandLine().getErr();
      try {
        validate();
        try (Connection c = HBaseConf.connect(hbaseConf)) {
          return run(new VolumeCatalog(c), spec.commandLine().getOut());
        }
      } catch (IllegalArgumentException | IllegalStateException | VolumeException.InUse e) {
        err.println("error: " + e.getMessage());
        return 2;
      } catch (HBaseConf.ClusterUnreachableException e) {
        err.println("error: " + e.getMessage());
        return 1;
      } catch (Exception e) {
        err.println("error: " + e + " (is the cluster up? check --hbase-conf)");
        return 1;
      } finally {
        err.flush();
        spec.commandLine().getOut().flush();
      }
    }

    void validate() {}
  }

  @Command(name = "create", mixinStandardHelpOptions = true,
      description = "Create a volume: a Salus volume (three replica tables driven by the Salus"
          + " replica endpoint) with --kind salus, or a plain-HBase volume with --kind hbase.")
  static final class Create extends Base {
    @Parameters(index = "0", paramLabel = "NAME", description = "Volume name.")
    String name;

    @Option(names = "--size", required = true, paramLabel = "SIZE",
        converter = ByteSizeConverter.class,
        description = "Volume size in bytes, with optional K/M/G/T suffix (e.g. 10G).")
    long size;

    @Option(names = "--block-size", paramLabel = "BYTES", defaultValue = "4096",
        description = "Block size: power of two from 512 to 262144 (default ${DEFAULT-VALUE}).")
    int blockSize;

    @Option(names = "--kind", defaultValue = "salus", paramLabel = "KIND",
        description = "salus or hbase (default ${DEFAULT-VALUE}). A salus volume needs the"
            + " cluster set up for Salus (docs/salus-on-hbase.md); on a cluster that is not,"
            + " create says so and creates nothing.")
    String kind;

    @Option(names = "--blocks-per-region", paramLabel = "N",
        description = "Salus volumes only: blocks per region (RRS), a power of two"
            + " (default 65536, or the largest power of two that fits a smaller volume).")
    Long blocksPerRegion;

    @Option(names = "--hash", defaultValue = "SHA-256",
        description = "Volume tree hash: SHA-256 or BLAKE3 (default ${DEFAULT-VALUE}).")
    String hash;

    @Option(names = "--regions", paramLabel = "N",
        description = "Pre-split the table into N regions, 1..4096 and at most one per block"
            + " (default: one per GiB of the volume, at least 1 and at most 64).")
    Integer regions;

    long blocks;

    @Override
    void validate() {
      VolumeCatalog.checkName(name);
      BlockGeometry.checkBlockSize(blockSize);
      ByteSizeConverter.checkMultiple(size, blockSize);
      blocks = size / blockSize;
      BlockGeometry.checkSize(blocks, blockSize);
      io.salus.blockdriver.tree.TreeHashes.forName(hash);
      if (!VolumeCatalog.KIND_SALUS.equals(kind) && !VolumeCatalog.KIND_HBASE.equals(kind)) {
        throw new IllegalArgumentException("bad --kind " + kind + ": use salus or hbase");
      }
      if (VolumeCatalog.KIND_SALUS.equals(kind)) {
        if (regions != null) {
          throw new IllegalArgumentException("--regions is for hbase volumes; a salus volume's"
              + " regions follow from --blocks-per-region");
        }
        if (!"SHA-256".equals(hash)) {
          throw new IllegalArgumentException("--hash " + hash + ": salus volumes use SHA-256"
              + " (the replica endpoint's tree hash)");
        }
        salusGeometry(); // validates
      } else if (blocksPerRegion != null) {
        throw new IllegalArgumentException("--blocks-per-region is for salus volumes; use"
            + " --regions for an hbase volume");
      }
    }

    /**
     * What keeps this cluster from running a Salus volume, or null: the master must run the placement observer (the
     * three replicas of every RRS on three distinct servers) and at least three region servers must be live.
     */
    static String salusClusterProblem(org.apache.hadoop.hbase.client.Connection c) throws java.io.IOException {
      try (org.apache.hadoop.hbase.client.Admin a = c.getAdmin()) {
        org.apache.hadoop.hbase.ClusterMetrics m = a.getClusterMetrics(java.util.EnumSet.of(
            org.apache.hadoop.hbase.ClusterMetrics.Option.LIVE_SERVERS,
            org.apache.hadoop.hbase.ClusterMetrics.Option.MASTER_COPROCESSORS));
        Class<?> observer = io.salus.core.hbase.SalusPlacementObserver.class;
        List<String> cps = m.getMasterCoprocessorNames();
        if (cps == null || !(cps.contains(observer.getSimpleName()) || cps.contains(observer.getName()))) {
          return "the master does not run " + observer.getName() + " (hbase.coprocessor.master.classes; it"
              + " runs " + cps + ")";
        }
        int live = m.getLiveServerMetrics().size();
        if (live < 3) {
          return "a Salus volume's replicas need three distinct region servers and " + live
              + (live == 1 ? " is" : " are") + " live";
        }
        return null;
      }
    }

    io.salus.core.hbase.VolumeGeometry salusGeometry() {
      return new io.salus.core.hbase.VolumeGeometry(name, size, blockSize,
          blocksPerRegion != null ? blocksPerRegion
              : io.salus.core.hbase.VolumeGeometry.defaultBlocksPerRegion(size / blockSize));
    }

    @Override
    int run(VolumeCatalog catalog, PrintWriter out) throws Exception {
      if (VolumeCatalog.KIND_SALUS.equals(kind)) {
        String problem = salusClusterProblem(catalog.connection());
        if (problem != null) {
          throw new IllegalStateException("cannot create salus volume " + name + " (salus is the default"
              + " --kind): " + problem + ". Set the cluster up for Salus (docs/salus-on-hbase.md,"
              + " \"Enabling Salus on an existing HBase 2.6 cluster, key by key\") or create a plain-HBase"
              + " volume with --kind hbase. Nothing was created.");
        }
        io.salus.core.hbase.VolumeGeometry g = salusGeometry();
        VolumeInfo i = catalog.createSalus(g);
        out.println("created salus volume " + i.name() + ": " + i.sizeInBytes() + " bytes, "
            + i.sizeInBlocks() + " blocks of " + i.blockSize() + " B, " + g.numRegions()
            + " regions of " + g.blocksPerRegion() + " blocks, tables " + i.table());
        return 0;
      }
      int r = regions != null ? regions
          : (int) Math.max(1, Math.min(64, (blocks * blockSize) >> 30));
      VolumeInfo i = catalog.create(name, blocks, blockSize, hash, r);
      out.println("created volume " + i.name() + ": " + i.sizeInBytes() + " bytes, "
          + i.sizeInBlocks() + " blocks of " + i.blockSize() + " B, table " + i.table());
      return 0;
    }
  }

  @Command(name = "list", mixinStandardHelpOptions = true, description = "List volumes.")
  static final class ListVolumes extends Base {
    @Override
    int run(VolumeCatalog catalog, PrintWriter out) throws Exception {
      List<VolumeInfo> all = catalog.list();
      out.printf("%-24s %-6s %14s %10s  %s%n", "NAME", "KIND", "SIZE(bytes)", "BLOCK", "CREATED");
      for (VolumeInfo i : all) {
        out.printf("%-24s %-6s %14d %10d  %s%n", i.name(), i.kind(), i.sizeInBytes(),
            i.blockSize(), i.created());
      }
      return 0;
    }
  }

  @Command(name = "describe", mixinStandardHelpOptions = true, description = "Show a volume.")
  static final class Describe extends Base {
    @Parameters(index = "0", paramLabel = "NAME")
    String name;

    @Override
    void validate() {
      VolumeCatalog.checkName(name);
    }

    @Override
    int run(VolumeCatalog catalog, PrintWriter out) throws Exception {
      VolumeInfo i = catalog.require(name);
      out.println("name:           " + i.name());
      out.println("kind:           " + i.kind());
      out.println("size:           " + i.sizeInBytes() + " bytes (" + i.sizeInBlocks()
          + " blocks)");
      out.println("block size:     " + i.blockSize());
      out.println("created:        " + i.created());
      out.println("table:          " + i.table() + " (" + i.regions()
          + (i.regions() == 1 ? " region)" : " regions)"));
      out.println("tree hash:      " + i.hashAlgorithm() + ", subtree height "
          + i.subtreeHeight());
      out.println("recorded root:  " + VolumeCatalog.hex(i.rootHash()) + " (seq " + i.rootSeq()
          + ", " + (i.cleanClose() ? "clean close" : "open or not closed cleanly") + ")");
      return 0;
    }
  }

  @Command(name = "delete", mixinStandardHelpOptions = true,
      description = "Delete a volume and all its data.")
  static final class Delete extends Base {
    @Parameters(index = "0", paramLabel = "NAME")
    String name;

    @Override
    void validate() {
      VolumeCatalog.checkName(name);
    }

    @Override
    int run(VolumeCatalog catalog, PrintWriter out) throws Exception {
      if (!catalog.delete(name)) {
        throw new IllegalArgumentException("no volume named '" + name
            + "': see 'salus volume list'");
      }
      out.println("deleted volume " + name);
      return 0;
    }
  }
}
