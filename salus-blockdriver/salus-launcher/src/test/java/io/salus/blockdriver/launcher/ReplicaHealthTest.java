package io.salus.blockdriver.launcher;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ReplicaHealthTest {
  @TempDir Path data;

  @Test
  void aReplicaThatDoesNotRunIsNamedWithItsReasonAndMakesStatusUnhealthy() throws Exception {
    ReplicaHealth.Report r = new ReplicaHealth.Report(Instant.now(), 11, 1,
        List.of("salus:demo_r1,...,x. on rs-2: the Salus replica endpoint of x is not running: java.lang.OutOfMemoryError"));
    assertFalse(r.healthy());
    assertEquals("11 Salus replicas running (1 catching up from a peer); 1 NOT running: salus:demo_r1,...,x. on rs-2:"
        + " the Salus replica endpoint of x is not running: java.lang.OutOfMemoryError", r.line());
    ReplicaHealth.write(data, r);
    HealthCheck.Result s = ReplicaHealth.read(data);
    assertEquals("replicas", s.component());
    assertFalse(s.healthy());
    assertTrue(s.detail().startsWith(r.line()), s.detail());
  }

  @Test
  void allRunningIsHealthyAndAnOldReportIsStale() throws Exception {
    ReplicaHealth.write(data, new ReplicaHealth.Report(Instant.now(), 12, 0, List.of()));
    HealthCheck.Result fresh = ReplicaHealth.read(data);
    assertTrue(fresh.healthy(), fresh.detail());
    assertTrue(fresh.detail().startsWith("12 Salus replicas running ("), fresh.detail());
    ReplicaHealth.write(data, new ReplicaHealth.Report(Instant.now().minusSeconds(3600), 12, 0, List.of()));
    HealthCheck.Result old = ReplicaHealth.read(data);
    assertFalse(old.healthy(), "a report an hour old says nothing about now: " + old.detail());
    assertTrue(old.detail().contains("stale"), old.detail());
  }

  @Test
  void noReportYetIsUnhealthyAndSaysWhy() throws Exception {
    HealthCheck.Result none = ReplicaHealth.read(data);
    assertFalse(none.healthy());
    assertTrue(none.detail().contains("no replica health report"), none.detail());
    Files.writeString(data.resolve(ReplicaHealth.FILE), "garbage");
    assertFalse(ReplicaHealth.read(data).healthy());
  }
}
