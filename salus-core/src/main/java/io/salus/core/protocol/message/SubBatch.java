package io.salus.core.protocol.message;

import io.salus.core.cert.CertificateFormatException;
import io.salus.core.cert.Wire;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The PUTs of one batch that fall in one region, in seq order, with the batch leader's region and the writer's
 * lease epoch ({@code epoch}; 0 = no lease, simulations). The client signs {@link #signedBytes()} (headers,
 * epoch included, and data checksums, not the data itself; replicas check each data checksum separately).
 * {@link #encode()} is the canonical log entry (version 2: version 1 had no epoch and is refused, never read
 * as if it had one).
 */
public record SubBatch(String volume, int region, long batchId, int leaderRegion, long epoch, List<Put> puts,
                       byte[] clientSig) {
    /** Log-entry encoding version: 2 added the writer epoch after the leader region. */
    public static final int VERSION = 2;

    /** A sub-batch of writer epoch 0 (no lease: simulations and tests without fencing). */
    public SubBatch(String volume, int region, long batchId, int leaderRegion, List<Put> puts, byte[] clientSig) {
        this(volume, region, batchId, leaderRegion, 0, puts, clientSig);
    }

    public SubBatch {
        if (epoch < 0) {
            throw new IllegalArgumentException("writer epoch " + epoch + " < 0");
        }
        puts = List.copyOf(puts);
        if (puts.isEmpty()) {
            throw new IllegalArgumentException("empty sub-batch");
        }
    }

    public long firstSeq() {
        return puts.get(0).seq();
    }

    public long lastSeq() {
        return puts.get(puts.size() - 1).seq();
    }

    /**
     * This sub-batch without its blocks' data (each put's data empty, its data hash, seqs, block and volume root
     * kept): what a replica keeps in memory of an entry it resolved and applied (issue 27). Not valid to send.
     */
    public SubBatch withoutData() {
        List<Put> light = new java.util.ArrayList<>(puts.size());
        for (Put p : puts) {
            light.add(new Put(p.seq(), p.prevNum(), p.block(), NO_DATA, p.dataHash(), p.volumeRoot()));
        }
        return new SubBatch(volume, region, batchId, leaderRegion, epoch, light, clientSig);
    }

    private static final byte[] NO_DATA = new byte[0];

    public SubBatch withSignature(byte[] sig) {
        return new SubBatch(volume, region, batchId, leaderRegion, epoch, puts, sig);
    }

    private Wire.Out header() {
        Wire.Out o = new Wire.Out().u8(VERSION).str8(volume).i32(region).i64(batchId).i32(leaderRegion)
                .i64(epoch).i32(puts.size());
        return o;
    }

    /** What the client signs. */
    public byte[] signedBytes() {
        Wire.Out o = header();
        for (Put p : puts) {
            o.i64(p.seq()).i64(p.prevNum()).i64(p.block()).hash(p.dataHash()).hash(p.volumeRoot());
        }
        return o.toByteArray();
    }

    /** Canonical log-entry encoding: header, puts with data, client signature. */
    public byte[] encode() {
        Wire.Out o = header();
        for (Put p : puts) {
            o.i64(p.seq()).i64(p.prevNum()).i64(p.block()).hash(p.dataHash()).hash(p.volumeRoot()).blob(p.data());
        }
        o.blob(clientSig == null ? new byte[0] : clientSig);
        return o.toByteArray();
    }

    /** Decodes a log entry; throws {@link CertificateFormatException} on malformed or truncated input. */
    public static SubBatch decode(byte[] b) {
        Wire.In in = new Wire.In(b);
        int v = in.u8("entry version");
        if (v != VERSION) {
            throw new CertificateFormatException("unsupported log entry version " + v + " (this build reads version "
                    + VERSION + (v == 1 ? "; version 1 entries carry no writer epoch and are not read as if they did:"
                    + " drain or recover the volume with the build that wrote them" : "") + ")", 0);
        }
        String vol = in.str8("volume");
        int region = in.i32("region");
        long batch = in.i64("batch id");
        int leader = in.i32("leader region");
        long epoch = in.i64("writer epoch");
        if (epoch < 0) {
            throw new CertificateFormatException("writer epoch " + epoch + " < 0", in.pos() - 8);
        }
        int n = in.i32("put count");
        if (n <= 0 || n > 1_000_000) {
            throw new CertificateFormatException("invalid put count " + n + " (1..1000000)", in.pos() - 4);
        }
        List<Put> puts = new ArrayList<>(Math.min(n, 1024));
        for (int i = 0; i < n; i++) {
            long seq = in.i64("seq");
            long prev = in.i64("prevNum");
            long block = in.i64("block");
            var dh = in.hash("data hash");
            var vr = in.hash("volume root");
            puts.add(new Put(seq, prev, block, in.blob("data"), dh, vr));
        }
        byte[] sig = in.blob("client signature");
        in.expectEnd("log entry");
        return new SubBatch(vol, region, batch, leader, epoch, puts, sig);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof SubBatch s && s.volume.equals(volume) && s.region == region && s.batchId == batchId
                && s.leaderRegion == leaderRegion && s.epoch == epoch && s.puts.equals(puts) && Arrays.equals(s.clientSig, clientSig);
    }

    @Override
    public int hashCode() {
        return Long.hashCode(batchId) * 31 + region;
    }

    @Override
    public String toString() {
        return "SubBatch[r" + region + ",b" + batchId + ",e" + epoch + ",seq " + firstSeq() + ".." + lastSeq() + "]";
    }
}
