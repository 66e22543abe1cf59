package io.salus.it.launcher;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.salus.blockdriver.volume.HBaseVolume;
import io.salus.blockdriver.volume.VolumeCatalog;
import io.salus.blockdriver.volume.VolumeException;
import io.salus.blockdriver.volume.VolumeInfo;
import io.salus.it.volume.MiniHBase;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.RegionInfo;
import org.apache.hadoop.hbase.zookeeper.ZKConfig;
import org.apache.zookeeper.ZooKeeper;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The writer lease is checked before acknowledging, not only before sending: a write sent while the
 * lease was held, which completes in HBase after the lease was lost, is answered with the fencing
 * error (another writer may own the volume by then). Real HBase mini cluster; the write is held in
 * flight by taking its region offline, and the lease is lost by ending its ZooKeeper session.
 */
class HBaseVolumeFencingTest {
  private static MiniHBase hbase;

  @BeforeAll
  static void start() throws Exception {
    hbase = new MiniHBase();
  }

  @AfterAll
  static void stop() throws Exception {
    if (hbase != null) {
      hbase.close();
    }
  }

  @Test
  void aWriteThatCompletesAfterTheLeaseIsLostIsNotAcknowledged() throws Exception {
    VolumeCatalog catalog = new VolumeCatalog(hbase.connection());
    VolumeInfo info = catalog.create("fenced", 256, 4096, "SHA-256", 1);
    try (HBaseVolume v = HBaseVolume.open(hbase.connection(), "fenced");
        Admin admin = hbase.connection().getAdmin()) {
      v.write(0, new byte[4096], false).join();
      v.read(0, 256).join(); // the whole tree is loaded: the write below only waits for its put
      List<RegionInfo> regions = admin.getRegions(TableName.valueOf(info.table()));
      for (RegionInfo r : regions) {
        admin.unassign(r.getRegionName());
      }
      byte[] data = new byte[4096];
      data[0] = 42;
      CompletableFuture<Void> inFlight = v.write(1, data, false); // sent with the lease held
      LeaseSessions.expire(ZKConfig.getZKQuorumServersString(hbase.conf()), v.lease());
      assertTrue(v.lease().isLost());
      for (RegionInfo r : regions) {
        admin.assign(r.getRegionName());
      }
      // The bound only guards against a hang; a timeout fails the test as well.
      ExecutionException e = assertThrows(ExecutionException.class,
          () -> inFlight.get(120, TimeUnit.SECONDS),
          "a write that completed after the lease was lost was acknowledged");
      assertTrue(e.getCause() instanceof VolumeException.Closed
          && e.getCause().getMessage().contains("fenced"), String.valueOf(e.getCause()));
    }
  }
}
