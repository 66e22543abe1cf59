package io.salus.blockdriver.launcher;

import java.nio.file.Path;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Callable;

import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code salus status}: health of the cluster a 'salus up' on --data is running. */
@Command(
    name = "status",
    mixinStandardHelpOptions = true,
    description = "Report the health of the embedded cluster started by 'salus up' on --data."
        + " Exit code 0 when every component is healthy, 1 otherwise.")
public final class StatusCommand implements Callable<Integer> {
  @Option(names = "--data", defaultValue = "salus-data", description = "Data directory of the running 'salus up' (default: ${DEFAULT-VALUE}).")
  Path data;

  @Override
  public Integer call() throws Exception {
    Properties endpoints = DataDirLayout.readEndpoints(data);
    if (endpoints.isEmpty()) {
      System.out.println("salus status: no running cluster recorded in " + data.toAbsolutePath()
          + "; start one with './salus up --data " + data + "'");
      return 1;
    }
    List<HealthCheck.Result> results = new java.util.ArrayList<>(HealthCheck.probe(endpoints));
    if ("salus".equals(endpoints.getProperty("volume.kind"))) {
      results.add(ReplicaHealth.read(data)); // written by 'salus up' every 30 s
    }
    boolean all = true;
    for (HealthCheck.Result r : results) {
      System.out.printf("%-10s %-9s %s%n", r.component(), r.healthy() ? "HEALTHY" : "UNHEALTHY", r.detail());
      all &= r.healthy();
    }
    System.out.println(all ? "overall: HEALTHY" : "overall: UNHEALTHY");
    return all ? 0 : 1;
  }
}
