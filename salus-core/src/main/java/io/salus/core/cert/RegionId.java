package io.salus.core.cert;

/**
 * A region of a volume: region {@code index} of the three tables {@code salus:<volume>_r0..r2},
 * served by RRS {@code index}.
 */
public record RegionId(String volume, int index) implements Comparable<RegionId> {
    public RegionId {
        if (volume == null || volume.isEmpty()) {
            throw new IllegalArgumentException("volume name must be non-empty");
        }
        if (index < 0) {
            throw new IllegalArgumentException("region index must be >= 0, got " + index);
        }
    }

    void write(Wire.Out o) {
        o.str8(volume).i32(index);
    }

    static RegionId read(Wire.In in) {
        String v = in.str8("region volume");
        int i = in.i32("region index");
        if (v.isEmpty() || i < 0) {
            throw new CertificateFormatException("invalid region (" + v + "," + i + ")", in.pos());
        }
        return new RegionId(v, i);
    }

    @Override
    public int compareTo(RegionId o) {
        int c = volume.compareTo(o.volume);
        return c != 0 ? c : Integer.compare(index, o.index);
    }

    @Override
    public String toString() {
        return volume + "#" + index;
    }
}
