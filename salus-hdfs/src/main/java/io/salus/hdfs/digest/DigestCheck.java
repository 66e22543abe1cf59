package io.salus.hdfs.digest;

import java.io.PrintStream;
import java.net.URI;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;

import io.salus.core.cert.RegionId;
import io.salus.hdfs.witness.WitnessTrust;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Operator command: list the files of a region directory without a valid agreed digest
 * ({@code salus digests --fs hdfs://nn:8020 --dir /hbase/... --trust trust.conf [--region vol#3]}).
 * Exit 0: all valid; 1: some invalid (listed as {@code STATUS path: reason}); 2: usage or I/O error.
 */
@Command(name = "digests", mixinStandardHelpOptions = true,
    description = "List files of a region directory lacking a valid agreed digest xattr"
        + " (" + DigestXattr.NAME + ").")
public final class DigestCheck implements Callable<Integer> {
  @Option(names = "--fs", description = "File system URI (default: fs.defaultFS).")
  URI fs;

  @Option(names = "--dir", required = true, description = "Region directory to check (recursive).")
  String dir;

  @Option(names = "--trust", required = true,
      description = "Trust file (scheme, replica keys, RRS membership; see docs/hdfs.md).")
  Path trust;

  @Option(names = "--region", description = "Expected region as volume#index (checked when set).")
  String region;

  private final Configuration conf;
  private final PrintStream out;

  /** For the {@code salus digests} sub-command: default Hadoop configuration, standard output. */
  public DigestCheck() {
    this(new Configuration(), System.out);
  }

  DigestCheck(Configuration conf, PrintStream out) {
    this.conf = conf;
    this.out = out;
  }

  /** Runs the command with the given Hadoop configuration; returns the exit code. */
  public static int run(Configuration conf, PrintStream out, String... args) {
    return new CommandLine(new DigestCheck(conf, out)).execute(args);
  }

  public static void main(String[] args) {
    System.exit(run(new Configuration(), System.out, args));
  }

  @Override
  public Integer call() {
    RegionId expected = null;
    if (region != null) {
      int h = region.lastIndexOf('#');
      try {
        expected = new RegionId(region.substring(0, h), Integer.parseInt(region.substring(h + 1)));
      } catch (RuntimeException e) {
        System.err.println("error: --region must look like volume#index, e.g. vol1#3 (got "
            + region + ")");
        return 2;
      }
    }
    try {
      WitnessTrust t = WitnessTrust.load(trust);
      DigestXattr.Trust dt = new DigestXattr.Trust(t.keys(), t::members);
      FileSystem f = fs == null ? FileSystem.get(conf) : FileSystem.get(fs, conf);
      List<DigestXattr.Verdict> bad = DigestXattr.listInvalid(f,
          new org.apache.hadoop.fs.Path(dir), dt, expected);
      for (DigestXattr.Verdict v : bad) {
        out.println(v.status() + " " + v.file().toUri().getPath() + ": " + v.reason());
      }
      out.println(bad.isEmpty() ? "all files under " + dir + " carry a valid agreed digest"
          : bad.size() + " file(s) under " + dir + " lack a valid agreed digest");
      return bad.isEmpty() ? 0 : 1;
    } catch (java.io.IOException | IllegalArgumentException e) {
      System.err.println("error: " + e.getMessage());
      return 2;
    }
  }
}
