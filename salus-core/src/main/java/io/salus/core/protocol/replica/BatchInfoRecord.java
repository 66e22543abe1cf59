package io.salus.core.protocol.replica;

import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.cert.Statement;
import io.salus.core.cert.Wire;
import io.salus.core.protocol.message.BatchInfo;
import io.salus.core.protocol.message.Message;
import io.salus.core.protocol.message.MessageCodec;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Predicate;

/**
 * Review rv20-1: the decision-record form of the client-signed BatchInfo a leader replica signed its TENTATIVE_COMMIT
 * on ({@link ReplicaDisk#recordLeaderDecisions}). Before, the BatchInfo lived only in memory: a leader replica
 * restarted after committing reloaded a COMMIT it could not prove with a BatchInfo and could not hand to a mount to
 * re-send, so once the other leader replica had lost its queued decision (review rv19-2) nobody held the BatchInfo and
 * every mount of the volume waited for ever.
 *
 * <p>Encoding: {@code u8 0xB1, u8 version = 1, blob} {@link MessageCodec#encode} of a {@code BatchInfoMsg} (message
 * code 2: the BatchInfo with the client's signature, exactly as it came). It is a record of its own in the decision
 * records, written right after its TENTATIVE_COMMIT in the same durable write. A certificate's first byte is its
 * version ({@link Certificate#VERSION} = 1), never {@code 0xB1}, so a reader of decisions that knows nothing of this
 * record (a build before it) skips it as a record that does not decode, and reads the TENTATIVE_COMMIT itself
 * unchanged; decision records written before it have no such record and load as they did (the COMMIT without its
 * BatchInfo).
 *
 * <p>Not trusted: the disk returns it as stored; the replica takes it only if the client's signature verifies and it
 * is the BatchInfo of a TENTATIVE_COMMIT it signed and reloaded (same volume, batch, seqs, its region a participant).
 */
public final class BatchInfoRecord {
    /** First byte of the record (never a certificate's version byte). */
    public static final int TAG = 0xB1;
    public static final int VERSION = 1;

    private BatchInfoRecord() {
    }

    /** The record bytes of a client-signed BatchInfo. */
    public static byte[] encode(BatchInfo info) {
        return new Wire.Out().u8(TAG).u8(VERSION).blob(MessageCodec.encode(new Message.BatchInfoMsg(info)))
                .toByteArray();
    }

    /** True if {@code record} is (claims to be) a BatchInfo record, not a certificate. */
    public static boolean is(byte[] record) {
        return record != null && record.length > 0 && (record[0] & 0xff) == TAG;
    }

    /**
     * The BatchInfo of a record written by {@link #encode}, as stored (its signature not checked here).
     *
     * @throws RuntimeException if the bytes are not such a record (damaged, another version)
     */
    public static BatchInfo decode(byte[] record) {
        Wire.In in = new Wire.In(record);
        if (in.u8("tag") != TAG) {
            throw new IllegalArgumentException("not a BatchInfo record");
        }
        int v = in.u8("version");
        if (v != VERSION) {
            throw new IllegalArgumentException("BatchInfo record version " + v + " (this build reads " + VERSION + ")");
        }
        byte[] msg = in.blob("BatchInfo message");
        in.expectEnd("BatchInfo record");
        if (!(MessageCodec.decode(msg) instanceof Message.BatchInfoMsg b)) {
            throw new IllegalArgumentException("the record holds no BatchInfo message");
        }
        return b.info();
    }

    /** The BatchInfos among decision records, in recording order; records that do not decode are skipped. */
    public static List<BatchInfo> batchInfos(List<byte[]> records) {
        List<BatchInfo> out = new ArrayList<>();
        for (byte[] b : records) {
            if (is(b)) {
                try {
                    out.add(decode(b));
                } catch (RuntimeException e) {
                    // damaged: proves nothing, the COMMIT loads without it (as a record written before rv20-1)
                }
            }
        }
        return out;
    }

    /**
     * The decision records of {@link ReplicaDisk#recordLeaderDecisions}, in the order they are written: each decision,
     * and after it its BatchInfo's record when {@code infos.get(i)} is not null.
     */
    public static List<byte[]> leaderDecisionRecords(List<Certificate> decisions, List<BatchInfo> infos) {
        if (infos.size() != decisions.size()) {
            throw new IllegalArgumentException(decisions.size() + " decisions, " + infos.size() + " BatchInfos");
        }
        List<byte[]> records = new ArrayList<>(decisions.size() * 2);
        for (int i = 0; i < decisions.size(); i++) {
            records.add(decisions.get(i).encode());
            if (infos.get(i) != null) {
                records.add(encode(infos.get(i)));
            }
        }
        return records;
    }

    /**
     * The decisions among decision records ({@link ReplicaDisk#decisions}), in recording order: BatchInfo records are
     * not decisions, and a record that does not decode proves nothing (the replica re-learns the decision from its
     * peers): both skipped.
     */
    public static List<Certificate> decisions(List<byte[]> records) {
        List<Certificate> out = new ArrayList<>();
        for (byte[] b : records) {
            if (is(b)) {
                continue;
            }
            try {
                out.add(Certificate.decode(b));
            } catch (RuntimeException e) {
                // proves nothing
            }
        }
        return out;
    }

    /**
     * The decision records {@link ReplicaDisk#compactDecisions} keeps, in order: a certificate if {@code keep} accepts
     * it (one that does not decode is dropped), a BatchInfo record while a kept TENTATIVE_COMMIT of the same volume
     * and batch is (it goes with its decision; one of a collected or never recorded decision goes).
     */
    public static List<byte[]> kept(List<byte[]> records, Predicate<Certificate> keep) {
        Set<java.util.Map.Entry<String, Long>> committed = new HashSet<>();
        boolean[] kept = new boolean[records.size()];
        for (int i = 0; i < records.size(); i++) {
            byte[] b = records.get(i);
            if (is(b)) {
                continue;
            }
            try {
                Certificate c = Certificate.decode(b);
                kept[i] = keep.test(c);
                if (kept[i] && c.type() == CertType.TENTATIVE_COMMIT) {
                    Statement.Decision d = c.statement(Statement.Decision.class);
                    committed.add(java.util.Map.entry(d.volume(), d.batchId()));
                }
            } catch (RuntimeException e) {
                // proves nothing (decisions() skips it too): dropped
            }
        }
        List<byte[]> out = new ArrayList<>();
        for (int i = 0; i < records.size(); i++) {
            byte[] b = records.get(i);
            if (is(b)) {
                try {
                    BatchInfo info = decode(b);
                    kept[i] = committed.contains(java.util.Map.entry(info.volume(), info.batchId()));
                } catch (RuntimeException e) {
                    kept[i] = false;
                }
            }
            if (kept[i]) {
                out.add(b);
            }
        }
        return out;
    }
}
