package io.salus.core.protocol.replica;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.salus.core.merkle.HashAlgorithm;
import io.salus.core.protocol.ProtocolConfig;
import io.salus.core.merkle.RegionLayout;
import java.util.Arrays;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Review rvw21-2 (the store contract behind RegionReplica's off-loop checkpoints): a checkpoint write that completes
 * forgets the blocks it wrote from the dirty set "unless changed since". A block written A, then B, then A again
 * while the checkpoints that took A and B are still being written was changed since the first one (the second one
 * wrote B over it), so it must stay dirty: the next checkpoint must write it. Compared by content, the first
 * checkpoint's A equalled the current A and the block was forgotten; the checkpoint files then composed B
 * (SalusCheckpointOffLoopTest#aBlockWrittenBackToAnEarlierContentWhileACheckpointWriteIsHeldStaysInTheNextCheckpoint
 * shows it with the endpoint's HRegionStore and HDFS disk).
 */
class RegionStoreDirtySetTest {
  static final int BS = 4096;

  @Test
  void aBlockWrittenBackToAnEarlierContentStaysDirtyAfterTheOlderCheckpointsComplete() {
    ProtocolConfig cfg = ProtocolConfig.of("v", BS, HashAlgorithm.SHA256, RegionLayout.ofRegionSize(64, 16));
    InMemoryRegionStore store = new InMemoryRegionStore(cfg, Map.of());
    byte[] a = new byte[BS];
    Arrays.fill(a, (byte) 'A');
    byte[] b = new byte[BS];
    Arrays.fill(b, (byte) 'B');
    store.apply(5, a.clone());
    Map<Long, byte[]> first = store.dirty(); // the checkpoint through 7 takes A
    store.apply(5, b.clone());
    Map<Long, byte[]> second = store.dirty(); // the checkpoint through 11 takes B
    store.apply(5, a.clone()); // A again, written by a later entry
    store.markDurable(first);
    store.markDurable(second);
    Map<Long, byte[]> next = store.dirty();
    assertTrue(next.containsKey(5L), "block 5 (A again, after the durable B) is in the next checkpoint");
    assertArrayEquals(a, next.get(5L));
  }
}
