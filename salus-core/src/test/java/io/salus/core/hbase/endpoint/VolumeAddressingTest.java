package io.salus.core.hbase.endpoint;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.core.crypto.NodeId;
import io.salus.core.hbase.SalusTableLayout;
import io.salus.core.hbase.VolumeGeometry;
import io.salus.core.protocol.RrsConfig;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The mapping of a volume's protocol nodes onto replica regions (no cluster needed). */
class VolumeAddressingTest {
    final VolumeAddressing a = new VolumeAddressing(new VolumeGeometry("v", 4 * 16 * 4096, 4096, 16));

    @Test
    void everyNodeOfAnRrsIsHostedByExactlyOneOfItsThreeRegions() {
        for (int r = 0; r < 4; r++) {
            RrsConfig c = a.membership().current(r);
            Set<NodeId> hosted = new HashSet<>();
            for (int k = 0; k < 3; k++) {
                for (NodeId n : a.hostedBy(r, k)) {
                    assertTrue(hosted.add(n), n + " hosted twice");
                    assertEquals(a.address(r, k), a.route(n));
                    assertEquals(SalusTableLayout.tableName("v", k), a.route(n).table());
                }
                assertEquals(c.replicas().get(k), a.replica(r, k));
            }
            Set<NodeId> all = new HashSet<>(c.replicas());
            all.addAll(c.metadataHolders());
            assertEquals(all, hosted, "replicas, stores and witnesses of RRS " + r);
        }
        assertArrayEquals(VolumeGeometry.rowKey(2 * 16), a.address(2, 1).row());
    }

    @Test
    void nodesOfAnotherVolumeOrOutOfRangeAreRefusedWithTheExpectedForm() {
        for (String bad : List.of("w/0/r0", "v/4/r0", "v/0/r3", "v/0/w2", "v/0/x0", "v/client", "v/-1/r0", "v/0/r")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> a.route(NodeId.of(bad)), bad);
            assertTrue(e.getMessage().contains(bad) && e.getMessage().contains("expected v/<region 0..3>/"),
                    e.getMessage());
        }
    }

    /** A region larger than the volume's tree is refused by the geometry, not later by every endpoint. */
    @Test
    void aRegionLargerThanTheVolumeIsRefusedAndTheDefaultFits() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new io.salus.core.hbase.VolumeGeometry("small", 32768L * 4096, 4096, 65536));
        assertTrue(e.getMessage().contains("use at most 32768"), e.getMessage());
        for (long blocks : new long[] {1, 3, 1000, 32768, 65536, 100_000, 1L << 30}) {
            long per = io.salus.core.hbase.VolumeGeometry.defaultBlocksPerRegion(blocks);
            io.salus.core.hbase.VolumeGeometry g = new io.salus.core.hbase.VolumeGeometry("v", blocks * 4096, 4096, per);
            assertTrue(per <= io.salus.core.hbase.VolumeGeometry.DEFAULT_BLOCKS_PER_REGION, blocks + " -> " + per);
            new VolumeAddressing(g); // the endpoint's addressing (and its region layout) accepts it
        }
        // a last region partly used is fine: 1000 blocks in regions of 1024
        new VolumeAddressing(new io.salus.core.hbase.VolumeGeometry("v", 1000L * 4096, 4096, 1024));
    }
}
