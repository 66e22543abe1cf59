package io.salus.blockdriver.launcher;

import io.salus.core.hbase.SalusTableLayout;
import io.salus.core.hbase.endpoint.ReplicaHost;
import io.salus.core.hbase.endpoint.SalusReplicaEndpoint;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.apache.hadoop.hbase.MiniHBaseCluster;
import org.apache.hadoop.hbase.regionserver.HRegion;
import org.apache.hadoop.hbase.util.JVMClusterUtil;

/**
 * The Salus replicas of the embedded cluster's region servers: how many run, how many are catching up from a peer, and
 * which are not running and why (a replica whose open failed leaves its region open without it and never fails the
 * region server: issue 27). {@code salus up} prints it after its readiness line and keeps it in
 * {@value #FILE} under the data directory (rewritten every {@link UpCommand#HEALTH_EVERY_SECONDS} s), where
 * {@code salus status} reads it.
 */
public final class ReplicaHealth {
  public static final String FILE = "replica-health";

  /** One count, taken at {@code at}. */
  public record Report(Instant at, int running, int catchingUp, List<String> notRunning) {
    public boolean healthy() {
      return notRunning.isEmpty();
    }

    /** One line: counts, then each replica that does not run with its reason. */
    public String line() {
      StringBuilder b = new StringBuilder().append(running).append(" Salus replicas running");
      if (catchingUp > 0) {
        b.append(" (").append(catchingUp).append(" catching up from a peer)");
      }
      if (!notRunning.isEmpty()) {
        b.append("; ").append(notRunning.size()).append(" NOT running: ").append(String.join("; ", notRunning));
      }
      return b.toString();
    }
  }

  private ReplicaHealth() {}

  /** Counts the replicas of every Salus replica table region open on the cluster's live region servers. */
  public static Report of(MiniHBaseCluster hbase) {
    int running = 0;
    int catchingUp = 0;
    List<String> down = new ArrayList<>();
    java.util.Set<String> seen = new java.util.HashSet<>();
    for (JVMClusterUtil.RegionServerThread t : hbase.getLiveRegionServerThreads()) {
      for (HRegion r : t.getRegionServer().getRegions()) {
        if (!SalusTableLayout.NAMESPACE.equals(r.getRegionInfo().getTable().getNamespaceAsString())) {
          continue;
        }
        seen.add(r.getRegionInfo().getEncodedName());
        Optional<SalusReplicaEndpoint> ep = Optional.ofNullable(r.getCoprocessorHost())
            .map(h -> h.findCoprocessor(SalusReplicaEndpoint.class));
        if (ep.isEmpty()) {
          continue; // not a replica table (the volume registry)
        }
        String why = ep.get().notRunning();
        ReplicaHost host = ep.get().host();
        if (why != null || host == null) {
          down.add(r.getRegionInfo().getRegionNameAsString() + " on " + t.getRegionServer().getServerName() + ": "
              + (why != null ? why : "stopped"));
        } else if (!host.serving()) {
          catchingUp++;
          running++;
        } else {
          running++;
        }
      }
    }
    down.addAll(notOpen(hbase, seen));
    return new Report(Instant.now(), running, catchingUp, down);
  }

  /**
   * The replica regions the master knows of that are not open with their endpoint on a live region server (in
   * transition, FAILED_OPEN, on an aborted server): not counted above, so named here with their state.
   */
  private static List<String> notOpen(MiniHBaseCluster hbase, java.util.Set<String> seen) {
    List<String> out = new ArrayList<>();
    org.apache.hadoop.hbase.master.HMaster m = hbase.getMaster();
    if (m == null || !m.isInitialized()) {
      out.add("the HBase master is not running or not initialized: replica regions not checked");
      return out;
    }
    try {
      for (org.apache.hadoop.hbase.client.TableDescriptor td : m.listTableDescriptorsByNamespace(
          SalusTableLayout.NAMESPACE)) {
        if (td.getValue(SalusTableLayout.REPLICA_ATTRIBUTE) == null) {
          continue; // the volume registry
        }
        for (org.apache.hadoop.hbase.client.RegionInfo ri
            : m.getAssignmentManager().getRegionStates().getRegionsOfTable(td.getTableName())) {
          if (!seen.contains(ri.getEncodedName())) {
            org.apache.hadoop.hbase.master.RegionState st =
                m.getAssignmentManager().getRegionStates().getRegionState(ri);
            out.add(ri.getRegionNameAsString() + ": not open on a live region server (state "
                + (st == null ? "unknown" : st.getState()) + ")");
          }
        }
      }
    } catch (IOException | RuntimeException e) {
      out.add("cannot list the Salus replica regions from the master: " + e);
    }
    return out;
  }

  /** Writes {@code report} to {@value #FILE} under {@code data} (replaced atomically). */
  public static void write(Path data, Report report) throws IOException {
    Path tmp = data.resolve(FILE + ".tmp");
    Files.writeString(tmp, report.at() + " " + (report.healthy() ? "HEALTHY" : "UNHEALTHY") + " " + report.line()
        + "\n", StandardCharsets.UTF_8);
    Files.move(tmp, data.resolve(FILE), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  /** The status line for {@code salus status}: the last report {@code salus up} wrote, or why there is none. */
  public static HealthCheck.Result read(Path data) {
    Path f = data.resolve(FILE);
    try {
      String s = Files.readString(f, StandardCharsets.UTF_8).trim();
      String[] p = s.split(" ", 3);
      if (p.length < 3) {
        return new HealthCheck.Result("replicas", false, f + " is not a health report: " + s);
      }
      long age = java.time.Duration.between(Instant.parse(p[0]), Instant.now()).toSeconds();
      boolean fresh = age <= 3L * UpCommand.HEALTH_EVERY_SECONDS;
      return new HealthCheck.Result("replicas", fresh && p[1].equals("HEALTHY"), p[2] + " (" + age + " s ago"
          + (fresh ? ")" : "; stale: is 'salus up' still running?)"));
    } catch (java.nio.file.NoSuchFileException e) {
      return new HealthCheck.Result("replicas", false, "no replica health report in " + data
          + " yet ('salus up' writes one once it is ready)");
    } catch (IOException | RuntimeException e) {
      return new HealthCheck.Result("replicas", false, "cannot read " + f + ": " + e.getMessage());
    }
  }
}
