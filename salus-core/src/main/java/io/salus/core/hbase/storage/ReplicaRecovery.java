package io.salus.core.hbase.storage;

import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.cert.Statement;
import io.salus.core.protocol.ProtocolConfig;
import io.salus.core.protocol.message.Put;
import io.salus.core.protocol.message.SubBatch;
import io.salus.core.protocol.replica.RegionStore;
import io.salus.core.protocol.replica.ReplicaDisk;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Predicate;

/**
 * Restart replay (issue 13 item 5): a replica region's puts skip HBase's WAL, so after an unclean stop
 * the region holds only what its last flush wrote. Before the region serves, {@link #replay} re-applies
 * the certified log entries from the replica's own Salus log: every entry after {@code fromExclusive}
 * whose batch has a COMMIT certificate among the disk's recorded decisions (one the caller trusts:
 * {@code trusted} checks the three leader signatures), in log order. Applying an entry writes whole
 * blocks, so replaying one that was already durable is harmless; it stops at the first entry with no
 * decision (that one waits for the protocol: {@code RegionReplica} re-learns it from the leaders).
 *
 * <p>Use (region open, before serving): {@code ReplicaRecovery.replay(disk, generation, store, cfg,
 * regionIndex, -1, cert -> cert.verify(verifier, leaderReplicaSet(cert)))} — {@code -1}: everything the log
 * still holds (the log is only garbage-collected through a certified checkpoint, which the region had
 * flushed). Then {@link RegionStore#markDurable()} so the replayed state is in HFiles.
 */
public final class ReplicaRecovery {
    private ReplicaRecovery() {
    }

    /** What a replay did. {@code stoppedAt}: the first index left for the protocol, or -1 if none. */
    public record Result(int applied, int aborted, long lastIndex, long stoppedAt) {
    }

    public static Result replay(ReplicaDisk disk, long generation, RegionStore store, ProtocolConfig cfg,
                                int regionIndex, long fromExclusive, Predicate<Certificate> trusted) {
        Map<Long, Certificate> decided = new HashMap<>();
        for (Certificate c : disk.decisions(generation)) {
            if ((c.type() == CertType.COMMIT || c.type() == CertType.ABORT) && trusted.test(c)) {
                decided.putIfAbsent(c.statement(Statement.Decision.class).batchId(), c);
            }
        }
        long first = cfg.layout().firstBlock(regionIndex);
        long last = disk.lastIndex(generation);
        int applied = 0;
        int aborted = 0;
        long lastDone = fromExclusive;
        boolean seen = false;
        for (long i = fromExclusive + 1; i <= last; i++) {
            byte[] b = disk.read(generation, i);
            if (b == null) {
                if (seen) {
                    return new Result(applied, aborted, lastDone, i); // a hole: the rest waits for recovery
                }
                continue; // garbage-collected prefix
            }
            seen = true;
            SubBatch sb = SubBatch.decode(b);
            if (!sb.volume().equals(cfg.volume()) || sb.region() != regionIndex) {
                throw new IllegalStateException("log entry " + i + " of generation " + generation + " is for "
                        + sb.volume() + " region " + sb.region() + ", not " + cfg.volume() + " region " + regionIndex
                        + ": the disk was opened on another region's files");
            }
            Certificate d = decided.get(sb.batchId());
            if (d == null) {
                return new Result(applied, aborted, lastDone, i);
            }
            Statement.Decision st = d.statement(Statement.Decision.class);
            if (st.firstSeq() > sb.firstSeq() || st.lastSeq() < sb.lastSeq() || st.leader().index() != sb.leaderRegion()) {
                return new Result(applied, aborted, lastDone, i); // the decision does not cover this entry
            }
            if (d.type() == CertType.COMMIT) {
                for (Put p : sb.puts()) {
                    store.apply(p.block() - first, p.data());
                }
                applied++;
            } else {
                aborted++;
            }
            lastDone = i;
        }
        return new Result(applied, aborted, lastDone, -1);
    }
}
