package io.salus.it.salus;

/**
 * Test-only {@code hbase.regionserver.abort.timeout.task}: HBase's default halts the whole JVM when an aborted region
 * server has not finished within {@code hbase.regionserver.abort.timeout} (20 min). In a mini cluster the region
 * servers share the test JVM, so a long generator run (the fault table) that aborts a region server early would be
 * halted 20 minutes later. This task only logs.
 */
public final class NoHaltOnAbortTimeout extends java.util.TimerTask {
  @Override
  public void run() {
    System.err.println("an aborted mini-cluster region server did not finish within the abort timeout; not halting"
        + " the test JVM");
  }
}
