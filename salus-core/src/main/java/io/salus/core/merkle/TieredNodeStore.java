package io.salus.core.merkle;

/**
 * Splits a tree by level: nodes at or above {@code splitLevel} go to {@code top} (e.g. the client's
 * memory), nodes below go to {@code lower} (e.g. a store that fetches region subtrees on demand
 * from region servers or from stored per-block hashes).
 */
public final class TieredNodeStore implements NodeStore {
    private final int splitLevel;
    private final NodeStore top;
    private final NodeStore lower;

    public TieredNodeStore(int splitLevel, NodeStore top, NodeStore lower) {
        if (splitLevel < 0) {
            throw new IllegalArgumentException("splitLevel must be >= 0, got " + splitLevel);
        }
        this.splitLevel = splitLevel;
        this.top = top;
        this.lower = lower;
    }

    private NodeStore pick(int level) {
        return level >= splitLevel ? top : lower;
    }

    @Override
    public Hash get(int level, long index) {
        return pick(level).get(level, index);
    }

    @Override
    public void put(int level, long index, Hash hash) {
        pick(level).put(level, index, hash);
    }

    @Override
    public void remove(int level, long index) {
        pick(level).remove(level, index);
    }

    public int splitLevel() {
        return splitLevel;
    }
}
