package io.salus.core.cert;

import io.salus.core.merkle.Hash;
import io.salus.core.merkle.VolumeRootRecord;

/**
 * What a certificate attests. The signed bytes are {@code version || kind || canonical statement},
 * so tentative and combined certificates of one kind sign the same bytes and different kinds can
 * never be confused.
 */
public sealed interface Statement permits Statement.LogEntry, Statement.PutOutcome, Statement.NoNextEntry,
        Statement.Checkpoint, Statement.Decision, Statement.WriterEpoch {

    StatementKind kind();

    void write(Wire.Out out);

    /** Canonical encoding of the statement alone. */
    default byte[] encode() {
        Wire.Out o = new Wire.Out();
        write(o);
        return o.toByteArray();
    }

    /**
     * Entry {@code index} of the logical log of {@code region} in log generation {@code generation}
     * (a new generation starts after each recovery) has {@code length} bytes with digest {@code digest}.
     */
    record LogEntry(RegionId region, long generation, long index, Hash digest, int length) implements Statement {
        @Override
        public StatementKind kind() {
            return StatementKind.LOG_ENTRY;
        }

        @Override
        public void write(Wire.Out o) {
            region.write(o);
            o.i64(generation).i64(index).hash(digest).i32(length);
        }

        static LogEntry read(Wire.In in) {
            RegionId r = RegionId.read(in);
            long g = in.i64NonNegative("generation");
            long i = in.i64NonNegative("log index");
            Hash d = in.hash("entry digest");
            int len = in.i32NonNegative("entry length");
            return new LogEntry(r, g, i, d, len);
        }
    }

    /**
     * The outcome of the client's sub-batch {@code (batchId, firstSeq..lastSeq)} on {@code region},
     * logged as entry {@code logIndex} with digest {@code entryDigest}. Kind PUT_SUCCESS or PUT_FAILED.
     */
    record PutOutcome(boolean success, RegionId region, long batchId, long firstSeq, long lastSeq, long logIndex,
                      Hash entryDigest) implements Statement {
        @Override
        public StatementKind kind() {
            return success ? StatementKind.PUT_SUCCESS : StatementKind.PUT_FAILED;
        }

        @Override
        public void write(Wire.Out o) {
            region.write(o);
            o.i64(batchId).i64(firstSeq).i64(lastSeq).i64(logIndex).hash(entryDigest);
        }

        static PutOutcome read(Wire.In in, boolean success) {
            RegionId r = RegionId.read(in);
            long b = in.i64("batch id");
            long f = in.i64("first seq");
            long l = in.i64("last seq");
            long i = in.i64("log index");
            Hash d = in.hash("entry digest");
            if (f > l) {
                throw new CertificateFormatException("first seq " + f + " > last seq " + l, in.pos());
            }
            return new PutOutcome(success, r, b, f, l, i, d);
        }
    }

    /** The signer stores no entry at {@code index} (nor after it) of the region's log generation. */
    record NoNextEntry(RegionId region, long generation, long index) implements Statement {
        @Override
        public StatementKind kind() {
            return StatementKind.NO_NEXT_ENTRY;
        }

        @Override
        public void write(Wire.Out o) {
            region.write(o);
            o.i64(generation).i64(index);
        }

        static NoNextEntry read(Wire.In in) {
            RegionId r = RegionId.read(in);
            long g = in.i64NonNegative("generation");
            long i = in.i64NonNegative("log index");
            return new NoNextEntry(r, g, i);
        }
    }

    /**
     * Flush/compaction consent: the region's state through log entry {@code throughIndex} of
     * {@code generation} is durable and its region tree root (logical digest of the cells) is
     * {@code regionRoot}; {@code lastSeq} is the last client seq included, and {@code volumeRoot} the
     * volume root that PUT produced: together they are the region's {@link VolumeRootRecord}, which
     * recovery and mount take from the checkpoint's snapshot and must not take on one DataNode's word.
     */
    record Checkpoint(RegionId region, long generation, long throughIndex, long lastSeq, Hash regionRoot,
                      Hash volumeRoot) implements Statement {
        /** The region's volume-root record this checkpoint certifies. */
        public VolumeRootRecord rootRecord() {
            return new VolumeRootRecord(volumeRoot, lastSeq);
        }

        @Override
        public StatementKind kind() {
            return StatementKind.CHECKPOINT;
        }

        @Override
        public void write(Wire.Out o) {
            region.write(o);
            o.i64(generation).i64(throughIndex).i64(lastSeq).hash(regionRoot).hash(volumeRoot);
        }

        static Checkpoint read(Wire.In in) {
            RegionId r = RegionId.read(in);
            long g = in.i64NonNegative("generation");
            long k = in.i64("through index");
            long s = in.i64("last seq");
            Hash regionRoot = in.hash("region root");
            return new Checkpoint(r, g, k, s, regionRoot, in.hash("volume root"));
        }
    }

    /**
     * A batch leader's decision on batch {@code batchId} covering client seqs
     * {@code firstSeq..lastSeq}; kind COMMIT or ABORT. {@code leader} is the leader's region and
     * {@code generation} its log generation when it decided: a restarted client reuses batch ids and
     * the seqs after the LCP, and a region may be remapped onto the same servers, so a decision of
     * an earlier generation must not verify as one of a later generation.
     */
    record Decision(boolean commit, String volume, long batchId, long firstSeq, long lastSeq, RegionId leader,
                    long generation)
            implements Statement {
        @Override
        public StatementKind kind() {
            return commit ? StatementKind.COMMIT : StatementKind.ABORT;
        }

        @Override
        public void write(Wire.Out o) {
            o.str8(volume).i64(batchId).i64(firstSeq).i64(lastSeq);
            leader.write(o);
            o.i64(generation);
        }

        static Decision read(Wire.In in, boolean commit) {
            String v = in.str8("volume");
            long b = in.i64("batch id");
            long f = in.i64("first seq");
            long l = in.i64("last seq");
            RegionId leader = RegionId.read(in);
            return new Decision(commit, v, b, f, l, leader, in.i64NonNegative("generation"));
        }
    }

    /**
     * The writer of {@code volume} holds its single-writer lease with epoch {@code epoch} (the lease's ZooKeeper
     * creation zxid: a later lease always has a higher one). Signed by the client; a replica that records it
     * (durably, before it answers) refuses sub-batches and BatchInfos of any other epoch.
     */
    record WriterEpoch(String volume, long epoch) implements Statement {
        @Override
        public StatementKind kind() {
            return StatementKind.WRITER_EPOCH;
        }

        @Override
        public void write(Wire.Out o) {
            o.str8(volume).i64(epoch);
        }

        static WriterEpoch read(Wire.In in) {
            String v = in.str8("volume");
            return new WriterEpoch(v, in.i64NonNegative("writer epoch"));
        }
    }

    /** Decodes a statement of the given kind; the whole input must be consumed. */
    static Statement read(StatementKind kind, Wire.In in) {
        Statement s = switch (kind) {
            case LOG_ENTRY -> LogEntry.read(in);
            case PUT_SUCCESS -> PutOutcome.read(in, true);
            case PUT_FAILED -> PutOutcome.read(in, false);
            case NO_NEXT_ENTRY -> NoNextEntry.read(in);
            case CHECKPOINT -> Checkpoint.read(in);
            case COMMIT -> Decision.read(in, true);
            case ABORT -> Decision.read(in, false);
            case WRITER_EPOCH -> WriterEpoch.read(in);
        };
        in.expectEnd(kind + " statement");
        return s;
    }
}
