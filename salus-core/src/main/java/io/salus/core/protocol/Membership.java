package io.salus.core.protocol;

import io.salus.core.cert.RegionId;

/** Current RRS configuration per region (the Master's assignment; ZooKeeper-backed in HBase). */
public interface Membership {
    RrsConfig current(int region);

    /** Configuration of a region in a given generation, or null if unknown. */
    RrsConfig config(RegionId region, long generation);
}
