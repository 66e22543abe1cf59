package io.salus.core.protocol.replica;

import io.salus.core.cert.Certificate;
import io.salus.core.merkle.VolumeRootRecord;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * A {@link ReplicaDisk} that hands every call to another one: the base of wrappers that change a few calls (the
 * endpoint's failure reporting, tests' fault injection). Every method forwards, also those with a default in the
 * interface, so a wrapper never falls back to a default the wrapped disk overrides (the merge defect of tasks tput18
 * and disk18: a wrapper without {@code sync} answered FLUSHes without syncing).
 */
public abstract class ForwardingReplicaDisk implements ReplicaDisk {
    protected final ReplicaDisk d;

    protected ForwardingReplicaDisk(ReplicaDisk d) {
        this.d = d;
    }

    @Override
    public void append(long generation, long index, byte[] entry) {
        d.append(generation, index, entry);
    }

    @Override
    public void appendAll(long generation, List<Long> indexes, List<byte[]> entries) {
        d.appendAll(generation, indexes, entries);
    }

    @Override
    public byte[] read(long generation, long index) {
        return d.read(generation, index);
    }

    @Override
    public long lastIndex(long generation) {
        return d.lastIndex(generation);
    }

    @Override
    public void writeSnapshot(RegionSnapshot s) {
        d.writeSnapshot(s);
    }

    @Override
    public void writeCheckpoint(long generation, long throughIndex, long lastSeq, Map<Long, byte[]> changed,
                                VolumeRootRecord rootRecord) {
        d.writeCheckpoint(generation, throughIndex, lastSeq, changed, rootRecord);
    }

    @Override
    public void writeStoredCheckpoint(long generation, long throughIndex, long lastSeq, Map<Long, byte[]> changed,
                                      VolumeRootRecord rootRecord, io.salus.core.merkle.Hash regionRoot,
                                      long storeVersion) {
        d.writeStoredCheckpoint(generation, throughIndex, lastSeq, changed, rootRecord, regionRoot, storeVersion);
    }

    @Override
    public RegionSnapshot readSnapshot(long generation, long throughIndex) {
        return d.readSnapshot(generation, throughIndex);
    }

    @Override
    public void recordDecision(long generation, Certificate decision) {
        d.recordDecision(generation, decision);
    }

    @Override
    public void recordDecisions(long generation, List<Certificate> decisions) {
        d.recordDecisions(generation, decisions);
    }

    @Override
    public void recordLeaderDecisions(long generation, List<Certificate> decisions,
                                      List<io.salus.core.protocol.message.BatchInfo> infos) {
        d.recordLeaderDecisions(generation, decisions, infos);
    }

    @Override
    public void recordLeaderDecision(long generation, Certificate decision,
                                     io.salus.core.protocol.message.BatchInfo info) {
        d.recordLeaderDecision(generation, decision, info);
    }

    @Override
    public List<io.salus.core.protocol.message.BatchInfo> decisionBatchInfos(long generation) {
        return d.decisionBatchInfos(generation);
    }

    @Override
    public void recordCommitMarks(long generation, List<Certificate> marks) {
        d.recordCommitMarks(generation, marks);
    }

    @Override
    public void sync(long generation) {
        d.sync(generation);
    }

    @Override
    public List<Certificate> decisions(long generation) {
        return d.decisions(generation);
    }

    @Override
    public void truncateLogPrefix(long generation, long throughIndex) {
        d.truncateLogPrefix(generation, throughIndex);
    }

    @Override
    public void collectCheckpoints(long generation, long throughIndex) {
        d.collectCheckpoints(generation, throughIndex);
    }

    @Override
    public void compactDecisions(long generation, Predicate<Certificate> keep) {
        d.compactDecisions(generation, keep);
    }
}
