package io.exalt.runner;

import java.util.List;

/**
 * Table 4.1 (HDFS capacity vs NameNode memory) as arithmetic: a least-squares line of NameNode heap (after full GC)
 * against the number of files in the namespace, per series of files with {@code k} blocks each; from two series with
 * different {@code k} the cost of a file and of a block are separated (slope_k = file + k * block); from those, how
 * many bytes of raw (replicated) storage a heap of H bytes can describe.
 */
final class NameNodeCapacityModel {
    private NameNodeCapacityModel() {
    }

    /** y = intercept + slope * x, with the coefficient of determination. */
    record Fit(double slope, double intercept, double r2, int points) {
    }

    /** Ordinary least squares; needs at least two distinct x. */
    static Fit fit(List<double[]> xy) {
        int n = xy.size();
        if (n < 2) {
            throw new IllegalArgumentException("a line needs at least 2 points, got " + n + ": give --steps at least two values");
        }
        double sx = 0, sy = 0;
        for (double[] p : xy) {
            sx += p[0];
            sy += p[1];
        }
        double mx = sx / n, my = sy / n, sxx = 0, sxy = 0, syy = 0;
        for (double[] p : xy) {
            sxx += (p[0] - mx) * (p[0] - mx);
            sxy += (p[0] - mx) * (p[1] - my);
            syy += (p[1] - my) * (p[1] - my);
        }
        if (sxx == 0) {
            throw new IllegalArgumentException("all points have the same x: give --steps at least two different values");
        }
        double slope = sxy / sxx;
        double r2 = syy == 0 ? 1 : sxy * sxy / (sxx * syy);
        return new Fit(slope, my - slope * mx, r2, n);
    }

    /** Bytes of heap per file and per block, from two series' slopes (bytes per file with k1 resp. k2 blocks each). */
    record Costs(double perFile, double perBlock) {
        /** Heap bytes for one file of {@code blocks} blocks. */
        double file(double blocks) {
            return perFile + blocks * perBlock;
        }
    }

    static Costs separate(int k1, double slope1, int k2, double slope2) {
        if (k1 == k2) {
            throw new IllegalArgumentException("separating file and block costs needs two different --blocks-per-file values");
        }
        double perBlock = (slope2 - slope1) / (k2 - k1);
        return new Costs(slope1 - k1 * perBlock, perBlock);
    }

    /**
     * Raw (replicated) bytes a NameNode heap of {@code heapBytes} can describe when every file holds {@code fileBytes}
     * of data in blocks of {@code blockSize}, each block {@code replication} times; {@code fixedBytes} of the heap are
     * not available to the namespace (0 = all of it).
     */
    static double rawCapacity(Costs c, double heapBytes, double fixedBytes, long fileBytes, long blockSize, int replication) {
        double blocksPerFile = Math.ceil((double) fileBytes / blockSize);
        double files = Math.max(0, heapBytes - fixedBytes) / c.file(blocksPerFile);
        return files * fileBytes * replication;
    }
}
