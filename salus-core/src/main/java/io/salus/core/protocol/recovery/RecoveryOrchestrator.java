package io.salus.core.protocol.recovery;

import io.salus.core.cert.Certificate;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.Verifier;
import io.salus.core.protocol.Membership;
import io.salus.core.protocol.ProtocolConfig;
import io.salus.core.protocol.RrsConfig;
import io.salus.core.protocol.Tentatives;
import io.salus.core.protocol.recovery.RegionLogRecovery.DataSource;
import io.salus.core.protocol.recovery.RegionLogRecovery.MetadataHolder;
import io.salus.core.protocol.recovery.RegionLogRecovery.RecoveredLog;
import io.salus.core.protocol.replica.RegionSnapshot;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The Master's role in recovery (§3.3.4), as library code behind the existing interfaces: for
 * every region recoverRegionLog (retrying when answers are lost: a retry, never a guess), then
 * identifyLCP and rebuildVolume through {@link Coordination}, then remapRegion and the new RRS's
 * unanimous adoption of the rebuilt state as its generation's first CHECKPOINT. The HBase master
 * coprocessor implements {@link Cluster}; the simulator does too.
 *
 * <p>The three steps are separate calls so a caller (or a test) can act between them; {@link #run}
 * does all three.
 */
public final class RecoveryOrchestrator {
    /** How the Master reaches the machines of the old and the new configurations. */
    public interface Cluster {
        /** The five metadata holders of {@code old}, in the order their answers arrive. */
        List<MetadataHolder> holders(RrsConfig old);

        /** The three DataNodes of {@code old}, in the order they are tried. */
        List<DataSource> dataNodes(RrsConfig old);

        /**
         * remapRegion: disables the old machines and returns the next generation's configuration on
         * fresh machines, already recorded in {@link Membership}.
         */
        RrsConfig remap(RrsConfig old);

        /**
         * Asks new replica {@code replica} to consent: it runs {@link VolumeRecovery#endorse} itself
         * and returns its TENTATIVE_CHECKPOINT.
         *
         * @throws RecoveryException if the replica refuses (the log does not verify)
         */
        Certificate endorse(NodeId replica, RrsConfig fresh, RecoveredLog log, Coordination.Lcp lcp)
                throws RecoveryException;

        /** Starts the new replicas of {@code fresh} from the adopted state. */
        void start(RrsConfig fresh, RegionSnapshot state);
    }

    /** What a recovery produced. */
    public record Outcome(VolumeRecovery.Rebuilt rebuilt, Map<Integer, RrsConfig> configs, int retries) {
        public Coordination.Lcp lcp() {
            return rebuilt.lcp();
        }
    }

    private final ProtocolConfig cfg;
    private final Verifier verifier;
    private final NodeId clientId;
    private final Membership membership;
    private final Coordination coordination;
    private final int maxAttempts;
    private int retries;

    /**
     * @param maxAttempts recoverRegionLog attempts per region before giving up (lost answers make
     *                    an attempt fail; with at most two faulty machines per RRS and no loss, one
     *                    attempt suffices)
     */
    public RecoveryOrchestrator(ProtocolConfig cfg, Verifier verifier, NodeId clientId, Membership membership,
                                Coordination coordination, int maxAttempts) {
        if (maxAttempts < 1) {
            throw new IllegalArgumentException("maxAttempts must be >= 1, got " + maxAttempts);
        }
        this.cfg = cfg;
        this.verifier = verifier;
        this.clientId = clientId;
        this.membership = membership;
        this.coordination = coordination;
        this.maxAttempts = maxAttempts;
    }

    /** recoverRegionLog for every region of the volume, from its current configuration. */
    public Map<Integer, RecoveredLog> recoverLogs(Cluster cluster) throws RecoveryException {
        Map<Integer, RecoveredLog> logs = new TreeMap<>();
        for (int r = 0; r < cfg.regionCount(); r++) {
            RrsConfig old = adopted(r);
            List<MetadataHolder> holders = cluster.holders(old);
            List<DataSource> dataNodes = cluster.dataNodes(old);
            for (int attempt = 1; ; attempt++) {
                try {
                    logs.put(r, RegionLogRecovery.recover(cfg, verifier, clientId, membership, old,
                            coordination.latestCheckpoint(old.region(),
                                    Coordination.signedByItsGeneration(verifier, membership)), holders, dataNodes));
                    break;
                } catch (RecoveryException e) {
                    if (attempt >= maxAttempts) {
                        throw new RecoveryException("recoverRegionLog of " + old.region() + " failed after " + attempt
                                + " attempt(s): " + e.getMessage());
                    }
                    retries++;
                }
            }
        }
        return logs;
    }

    /**
     * The newest configuration of region {@code r} whose state was adopted: the current one, unless
     * an earlier {@link #adopt} remapped the region and failed (a new replica refused or endorsed
     * another state) before it stored the new generation's first CHECKPOINT. That generation never
     * held any state, so the region's log is still the one of the generation the latest checkpoint
     * names, and recovery starts from there again.
     */
    private RrsConfig adopted(int r) {
        RrsConfig current = membership.current(r);
        long cpGeneration = coordination.latestCheckpoint(current.region(),
                        Coordination.signedByItsGeneration(verifier, membership))
                .map(c -> c.statement(io.salus.core.cert.Statement.Checkpoint.class).generation()).orElse(0L);
        if (current.generation() > cpGeneration) {
            RrsConfig adopted = membership.config(current.region(), cpGeneration);
            if (adopted != null) {
                return adopted;
            }
        }
        return current;
    }

    /** identifyLCP and rebuildVolume under recovery {@code epoch}. */
    public VolumeRecovery.Rebuilt rebuild(long epoch, Map<Integer, RecoveredLog> logs) throws RecoveryException {
        return VolumeRecovery.identifyAndRebuild(cfg, verifier, membership, coordination, epoch, logs);
    }

    /**
     * remapRegion for every region, the new replicas' unanimous consent (three matching
     * TENTATIVE_CHECKPOINTs form the new generation's first CHECKPOINT, stored in coordination), and
     * the start of the new replicas.
     *
     * @throws RecoveryException naming the replica that refused or signed a different state
     */
    public Map<Integer, RrsConfig> adopt(VolumeRecovery.Rebuilt rb, Cluster cluster) throws RecoveryException {
        Map<Integer, RrsConfig> configs = new TreeMap<>();
        for (int r = 0; r < cfg.regionCount(); r++) {
            // remap from the configuration whose log was recovered (not membership.current(r), which
            // is an unadopted generation if an earlier adopt failed for this region)
            RrsConfig fresh = cluster.remap(rb.logs().get(r).old());
            Tentatives<Long> consent = new Tentatives<>();
            List<Certificate> matching = List.of();
            for (NodeId rep : fresh.replicas()) {
                Certificate t = cluster.endorse(rep, fresh, rb.logs().get(r), rb.lcp());
                matching = consent.offer(fresh.generation(), t);
                if (matching.size() != consent.signers(fresh.generation())) {
                    throw new RecoveryException(fresh.region() + ": new replica " + rep + " endorsed " + t
                            + ", the others " + matching);
                }
            }
            Certificate first = Tentatives.combineIfEnough(matching, Tentatives.UNANIMOUS);
            if (first == null) {
                throw new RecoveryException(fresh.region() + ": only " + matching.size()
                        + " matching endorsements from the new replicas " + fresh.replicas());
            }
            coordination.putCheckpoint(first);
            cluster.start(fresh, rb.regions().get(r));
            configs.put(r, fresh);
        }
        return configs;
    }

    /** All three steps. */
    public Outcome run(long epoch, Cluster cluster) throws RecoveryException {
        VolumeRecovery.Rebuilt rb = rebuild(epoch, recoverLogs(cluster));
        return new Outcome(rb, adopt(rb, cluster), retries);
    }

    /** recoverRegionLog attempts that failed and were retried so far. */
    public int retries() {
        return retries;
    }
}
