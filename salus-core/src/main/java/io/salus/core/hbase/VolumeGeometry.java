package io.salus.core.hbase;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The geometry of one Salus volume on HBase: its name, size, block size and region size (blocks per region).
 * Region {@code i} of each of the three replica tables holds blocks {@code [i * blocksPerRegion, (i + 1) *
 * blocksPerRegion)}; the three regions {@code i} form RRS {@code i}. Recorded in every replica table as the
 * {@link SalusTableLayout#LAYOUT_ATTRIBUTE} table attribute ({@link #encode}).
 */
public record VolumeGeometry(String volume, long sizeBytes, int blockSize, long blocksPerRegion) {
    /** Volume names: what an HBase table qualifier allows, minus the '.' HBase reserves at the start. */
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_-]{0,99}");
    /** The region size used when none is given: 2^16 blocks (256 MiB of 4 KiB blocks). */
    public static final long DEFAULT_BLOCKS_PER_REGION = 1L << 16;

    public VolumeGeometry {
        if (volume == null || !NAME.matcher(volume).matches()) {
            throw new IllegalArgumentException("volume name '" + volume + "' is not valid: use 1-100 characters from"
                    + " [A-Za-z0-9_-], starting with a letter or digit");
        }
        if (blockSize < 512 || Integer.bitCount(blockSize) != 1) {
            throw new IllegalArgumentException("block size " + blockSize + " is not valid: use a power of two >= 512"
                    + " (e.g. 4096)");
        }
        if (sizeBytes <= 0 || sizeBytes % blockSize != 0) {
            throw new IllegalArgumentException("volume size " + sizeBytes + " is not valid: use a positive multiple"
                    + " of the block size " + blockSize);
        }
        if (blocksPerRegion <= 0 || Long.bitCount(blocksPerRegion) != 1) {
            throw new IllegalArgumentException("blocks per region " + blocksPerRegion + " is not valid: use a power"
                    + " of two (default " + DEFAULT_BLOCKS_PER_REGION + ")");
        }
        long blocks = sizeBytes / blockSize;
        if (blocksPerRegion > 1L << io.salus.core.merkle.MerkleTree.depthFor(blocks)) {
            // the region's tree would sit above the volume tree's root: every replica endpoint that opened such a
            // region failed ("region level 16 must be in [0,15] for 32768 blocks"), once aborting its region server
            throw new IllegalArgumentException("blocks per region " + blocksPerRegion + " is larger than volume "
                    + volume + " (" + blocks + " blocks): use at most " + defaultBlocksPerRegion(blocks)
                    + " (--blocks-per-region), or leave it out to get that");
        }
    }

    /**
     * The region size of a volume of {@code blocks} blocks when none is given: {@link #DEFAULT_BLOCKS_PER_REGION},
     * or the largest power of two that fits when the volume is smaller than one such region.
     */
    public static long defaultBlocksPerRegion(long blocks) {
        return Math.min(DEFAULT_BLOCKS_PER_REGION, Long.highestOneBit(Math.max(1, blocks)));
    }

    public long numBlocks() {
        return sizeBytes / blockSize;
    }

    /** Number of regions per replica table (= number of RRSs); the last one may be partly used. */
    public int numRegions() {
        long n = (numBlocks() + blocksPerRegion - 1) / blocksPerRegion;
        if (n > 100_000) {
            throw new IllegalArgumentException("volume " + volume + " would need " + n + " regions per replica table;"
                    + " use a larger region size (blocks per region)");
        }
        return (int) n;
    }

    /** The RRS (region index) that holds a block. */
    public int regionOf(long block) {
        if (block < 0 || block >= numBlocks()) {
            throw new IllegalArgumentException("block " + block + " is outside volume " + volume + " (0.."
                    + (numBlocks() - 1) + ")");
        }
        return (int) (block / blocksPerRegion);
    }

    /** Row key of a block: its 8-byte big-endian block number (as HBaseVolume). */
    public static byte[] rowKey(long block) {
        byte[] k = new byte[8];
        for (int i = 7; i >= 0; i--) {
            k[i] = (byte) block;
            block >>>= 8;
        }
        return k;
    }

    /** The split keys: the row keys of the first block of regions 1..n-1 (identical for the three tables). */
    public byte[][] splitKeys() {
        int n = numRegions();
        byte[][] keys = new byte[n - 1][];
        for (int i = 1; i < n; i++) {
            keys[i - 1] = rowKey(i * blocksPerRegion);
        }
        return keys;
    }

    /** Text form kept in the table attribute: {@code version=1;volume=..;sizeBytes=..;blockSize=..;blocksPerRegion=..}. */
    public String encode(int layoutVersion) {
        return "version=" + layoutVersion + ";volume=" + volume + ";sizeBytes=" + sizeBytes + ";blockSize="
                + blockSize + ";blocksPerRegion=" + blocksPerRegion + ";regions=" + numRegions();
    }

    /** Parses {@link #encode}; refuses a layout version other than {@code expectedVersion}. */
    public static VolumeGeometry parse(String text, int expectedVersion) {
        Map<String, String> kv = new LinkedHashMap<>();
        for (String part : text.split(";")) {
            int eq = part.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("Salus layout attribute '" + text + "' is malformed at '" + part
                        + "'");
            }
            kv.put(part.substring(0, eq), part.substring(eq + 1));
        }
        String version = kv.get("version");
        if (!String.valueOf(expectedVersion).equals(version)) {
            throw new IllegalArgumentException("Salus layout version " + version + " is not supported (this build"
                    + " reads version " + expectedVersion + ")");
        }
        try {
            return new VolumeGeometry(kv.get("volume"), Long.parseLong(kv.get("sizeBytes")),
                    Integer.parseInt(kv.get("blockSize")), Long.parseLong(kv.get("blocksPerRegion")));
        } catch (NumberFormatException | NullPointerException e) {
            throw new IllegalArgumentException("Salus layout attribute '" + text + "' is missing or has a bad"
                    + " field: " + e.getMessage(), e);
        }
    }
}
