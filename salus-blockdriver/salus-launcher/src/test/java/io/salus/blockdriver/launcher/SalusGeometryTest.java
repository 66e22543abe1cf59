package io.salus.blockdriver.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.salus.core.hbase.VolumeGeometry;
import io.salus.core.merkle.RegionLayout;
import org.junit.jupiter.api.Test;

/**
 * The geometry 'salus up' gives a new Salus volume is one the replica endpoint accepts (its {@link RegionLayout}):
 * before, a volume smaller than one default region (2^16 blocks = 256 MiB) got regions larger than the volume, and
 * every region server that opened them aborted ("region level 16 must be in [0,15] for 32768 blocks").
 */
class SalusGeometryTest {
  @Test
  void everyVolumeSizeGetsRegionsTheEndpointAccepts() {
    for (long size : new long[] {4096, 16L << 20, 100L << 20, 128L << 20, 1L << 30, 3L << 30}) {
      VolumeGeometry g = EmbeddedCluster.salusGeometry("demo", size);
      RegionLayout layout = RegionLayout.ofRegionSize(g.numBlocks(), g.blocksPerRegion()); // throws if too big
      assertEquals(g.numRegions(), layout.regionCount(), "size " + size);
    }
    assertEquals(VolumeGeometry.DEFAULT_BLOCKS_PER_REGION,
        EmbeddedCluster.salusGeometry("demo", 1L << 30).blocksPerRegion(), "1 GiB keeps the default region size");
    assertEquals(1 << 15, EmbeddedCluster.salusGeometry("demo", 128L << 20).blocksPerRegion());
    assertEquals(1 << 14, EmbeddedCluster.salusGeometry("demo", 100L << 20).blocksPerRegion());
  }
}
