package io.salus.core.hbase;

import java.io.IOException;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.hadoop.hbase.CoprocessorEnvironment;
import org.apache.hadoop.hbase.client.BalanceRequest;
import org.apache.hadoop.hbase.client.RegionInfo;
import org.apache.hadoop.hbase.client.TableDescriptor;
import org.apache.hadoop.hbase.coprocessor.MasterCoprocessor;
import org.apache.hadoop.hbase.coprocessor.MasterCoprocessorEnvironment;
import org.apache.hadoop.hbase.coprocessor.MasterObserver;
import org.apache.hadoop.hbase.coprocessor.ObserverContext;
import org.apache.hadoop.hbase.master.RegionPlan;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Master coprocessor keeping the three replicas of every RRS on three distinct region servers. Enable it with the
 * one cluster-wide Salus key, in the master's hbase-site.xml:
 * {@code hbase.coprocessor.master.classes = io.salus.core.hbase.SalusPlacementObserver}.
 *
 * <p>HBase 2.6 assigns regions from several places that no single hook sees (table creation round-robin, the
 * ServerCrashProcedure after a region server dies, the balancer, operator moves), so this observer corrects
 * placement after the fact: an {@link RrsPlacementReconciler} pass runs every {@value #DEFAULT_PERIOD_MS} ms
 * ({@link #PERIOD_KEY}) once the master is active, and right after a Salus table is created and after every
 * balancer run. Passes run on one background thread, never on an RPC handler or procedure thread.
 *
 * <p>It also serves RRS replacement requests from clients (the master endpoint {@link RrsReplacement}).
 */
public class SalusPlacementObserver implements MasterCoprocessor, MasterObserver {
    private static final Logger LOG = LoggerFactory.getLogger(SalusPlacementObserver.class);
    /** Milliseconds between two placement checks. */
    public static final String PERIOD_KEY = "salus.placement.check.period.ms";
    public static final long DEFAULT_PERIOD_MS = 10_000;

    private volatile MasterCoprocessorEnvironment env;
    private volatile ScheduledExecutorService executor;
    private final AtomicBoolean queued = new AtomicBoolean();
    private long periodMs;

    @Override
    public void start(CoprocessorEnvironment e) throws IOException {
        if (!(e instanceof MasterCoprocessorEnvironment m)) {
            throw new IOException(getClass().getName() + " is a master coprocessor: list it in"
                    + " hbase.coprocessor.master.classes, not as a region or region server coprocessor");
        }
        env = m;
        periodMs = m.getConfiguration().getLong(PERIOD_KEY, DEFAULT_PERIOD_MS);
        if (periodMs <= 0) {
            throw new IOException(PERIOD_KEY + " = " + periodMs + " is not valid: use a positive number of"
                    + " milliseconds (default " + DEFAULT_PERIOD_MS + ")");
        }
    }

    @Override
    public void stop(CoprocessorEnvironment e) {
        ScheduledExecutorService ex = executor;
        if (ex != null) {
            ex.shutdownNow();
        }
    }

    /** RRS replacement requests from clients ({@link RrsReplacement}). */
    private final RrsReplacement replacement = new RrsReplacement(() -> env.getConnection());

    @Override
    public Iterable<com.google.protobuf.Service> getServices() {
        return List.of(replacement);
    }

    @Override
    public Optional<MasterObserver> getMasterObserver() {
        return Optional.of(this);
    }

    @Override
    public void postStartMaster(ObserverContext<MasterCoprocessorEnvironment> ctx) {
        ScheduledThreadPoolExecutor ex = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "salus-rrs-placement");
            t.setDaemon(true);
            return t;
        });
        ex.setRemoveOnCancelPolicy(true);
        executor = ex;
        ex.scheduleWithFixedDelay(this::pass, periodMs, periodMs, TimeUnit.MILLISECONDS);
        LOG.info("Salus placement check every {} ms", periodMs);
    }

    @Override
    public void postCompletedCreateTableAction(ObserverContext<MasterCoprocessorEnvironment> ctx,
            TableDescriptor desc, RegionInfo[] regions) {
        if (SalusTableLayout.isReplicaTable(desc)) {
            trigger();
        }
    }

    @Override
    public void postBalance(ObserverContext<MasterCoprocessorEnvironment> ctx, BalanceRequest request,
            List<RegionPlan> plans) {
        trigger();
    }

    /** Runs a pass soon (coalesced: at most one queued). */
    private void trigger() {
        ScheduledExecutorService ex = executor;
        if (ex != null && queued.compareAndSet(false, true)) {
            ex.execute(() -> {
                queued.set(false);
                pass();
            });
        }
    }

    private void pass() {
        try {
            RrsPlacementReconciler.Pass p = new RrsPlacementReconciler(env.getConnection()).reconcileOnce();
            if (p.violations() > 0 || p.failedMoves() > 0) {
                LOG.info("Salus placement pass: {}", p);
            }
        } catch (IOException | RuntimeException e) {
            LOG.warn("Salus placement pass failed, retrying in {} ms: {}", periodMs, e.toString());
        }
    }
}
