package io.salus.core.merkle;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Per-level hashes of entirely unwritten subtrees: level 0 is the leaf hash of an all-zero block of
 * the volume's block size, level l+1 is {@code nodeHash(empty[l], empty[l])}.
 */
public final class EmptyHashes {
    public static final int MAX_LEVELS = 64;
    private static final Map<String, EmptyHashes> CACHE = new ConcurrentHashMap<>();

    private final Hash[] byLevel = new Hash[MAX_LEVELS + 1];

    private EmptyHashes(HashAlgorithm alg, int blockSize) {
        byLevel[0] = alg.leafHash(new byte[blockSize]);
        for (int l = 1; l <= MAX_LEVELS; l++) {
            byLevel[l] = alg.nodeHash(byLevel[l - 1], byLevel[l - 1]);
        }
    }

    public static EmptyHashes of(HashAlgorithm alg, int blockSize) {
        if (blockSize <= 0) {
            throw new IllegalArgumentException("block size must be positive, got " + blockSize);
        }
        return CACHE.computeIfAbsent(alg + "/" + blockSize, k -> new EmptyHashes(alg, blockSize));
    }

    public Hash at(int level) {
        return byLevel[level];
    }
}
