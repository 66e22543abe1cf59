package io.salus.core.protocol;

import io.salus.core.merkle.HashAlgorithm;
import io.salus.core.merkle.RegionLayout;
import java.util.EnumSet;
import java.util.Set;

/**
 * Fixed parameters of one volume: name, block size, hash algorithm, region layout, and (tests only)
 * enabled {@link Mutation}s.
 */
public record ProtocolConfig(String volume, int blockSize, HashAlgorithm hash, RegionLayout layout,
                             Set<Mutation> mutations) {
    public ProtocolConfig {
        if (blockSize <= 0) {
            throw new IllegalArgumentException("block size must be positive, got " + blockSize);
        }
        mutations = mutations.isEmpty() ? Set.of() : EnumSet.copyOf(mutations);
    }

    public static ProtocolConfig of(String volume, int blockSize, HashAlgorithm hash, RegionLayout layout) {
        return new ProtocolConfig(volume, blockSize, hash, layout, Set.of());
    }

    public boolean mutated(Mutation m) {
        return mutations.contains(m);
    }

    public ProtocolConfig withMutation(Mutation m) {
        EnumSet<Mutation> s = mutations.isEmpty() ? EnumSet.noneOf(Mutation.class) : EnumSet.copyOf(mutations);
        s.add(m);
        return new ProtocolConfig(volume, blockSize, hash, layout, s);
    }

    public int regionCount() {
        return (int) layout.regionCount();
    }
}
