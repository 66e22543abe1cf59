package io.salus.core.merkle;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** A {@link NodeStore} in a map per level. Not thread-safe. */
public final class InMemoryNodeStore implements NodeStore {
    private final List<Map<Long, Hash>> levels = new ArrayList<>();

    private Map<Long, Hash> level(int level, boolean create) {
        while (create && levels.size() <= level) {
            levels.add(new HashMap<>());
        }
        return level < levels.size() ? levels.get(level) : null;
    }

    @Override
    public Hash get(int level, long index) {
        Map<Long, Hash> m = level(level, false);
        return m == null ? null : m.get(index);
    }

    @Override
    public void put(int level, long index, Hash hash) {
        level(level, true).put(index, hash);
    }

    @Override
    public void remove(int level, long index) {
        Map<Long, Hash> m = level(level, false);
        if (m != null) {
            m.remove(index);
        }
    }

    /** Number of stored (non-empty) nodes, for tests and memory accounting. */
    public long size() {
        long n = 0;
        for (Map<Long, Hash> m : levels) {
            n += m.size();
        }
        return n;
    }

    /** A deep copy (hashes are immutable). */
    public InMemoryNodeStore copy() {
        InMemoryNodeStore c = new InMemoryNodeStore();
        for (Map<Long, Hash> m : levels) {
            c.levels.add(new HashMap<>(m));
        }
        return c;
    }
}
