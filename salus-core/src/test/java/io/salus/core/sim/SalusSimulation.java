package io.salus.core.sim;

import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import io.salus.core.cert.Statement;
import io.salus.core.crypto.KeyDirectory;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.NodeKeys;
import io.salus.core.crypto.SignatureScheme;
import io.salus.core.crypto.Signer;
import io.salus.core.merkle.Hash;
import io.salus.core.merkle.HashAlgorithm;
import io.salus.core.merkle.RegionLayout;
import io.salus.core.protocol.Membership;
import io.salus.core.protocol.Mutation;
import io.salus.core.protocol.ProtocolConfig;
import io.salus.core.protocol.RrsConfig;
import io.salus.core.protocol.client.BlockWrite;
import io.salus.core.protocol.client.ClientListener;
import io.salus.core.protocol.client.VolumeClient;
import io.salus.core.protocol.message.Message;
import io.salus.core.protocol.message.SubBatch;
import io.salus.core.protocol.recovery.Coordination;
import io.salus.core.protocol.recovery.InMemoryCoordination;
import io.salus.core.protocol.recovery.RecoveryException;
import io.salus.core.protocol.recovery.RecoveryOrchestrator;
import io.salus.core.protocol.recovery.RegionLogRecovery;
import io.salus.core.protocol.recovery.VolumeRecovery;
import io.salus.core.protocol.replica.InMemoryReplicaDisk;
import io.salus.core.protocol.replica.RegionReplica;
import io.salus.core.protocol.replica.RegionSnapshot;
import io.salus.core.protocol.replica.ReplicaHooks;
import io.salus.core.protocol.witness.InMemoryCertificateStore;
import io.salus.core.protocol.witness.WitnessLog;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.PriorityQueue;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;

/**
 * One seeded scenario of the whole protocol: a client, an RRS per region (3 region-server/DataNode
 * machines + 2 witnesses), the Master's recovery, and a faulty network, all driven by one
 * {@link Random} so that a seed reproduces the run exactly (modelled on Kafka's
 * RaftEventSimulationTest). Invariants are checked after every event; see {@link #run()}.
 */
final class SalusSimulation {
    static final String VOLUME = "simvol";
    static final long TICK = 20;
    static final long RETRANSMIT = 100;
    static final long STALL = 450;
    static final long FAULT_PHASE_END = 2500;
    static final long DEADLINE = 40_000;

    /** Summary of one run. */
    record Result(long seed, SimulationViolation violation, int recoveries, long messages, int ackedBatches,
                  String description, Map<String, Integer> stats) {
    }

    /** Counters reported by the seeded run: faults injected ("fault:KIND") and aborts seen ("abort:KIND"). */
    final Map<String, Integer> stats = new TreeMap<>();

    void count(String key) {
        stats.merge(key, 1, Integer::sum);
    }

    final long seed;
    final Random rnd;
    final ProtocolConfig cfg;
    final SignatureScheme scheme;
    final KeyDirectory dir;
    final Map<NodeId, Signer> signers = new HashMap<>();
    final NodeId clientId = NodeId.of("client");
    final MessageRouter router;
    final InMemoryCoordination coord = new InMemoryCoordination();
    final Oracle oracle;
    final SimMembership membership = new SimMembership();
    final List<Machine> machines = new ArrayList<>();
    final Map<NodeId, Machine> byNode = new HashMap<>();
    VolumeClient client;
    private final int clientPipeline;
    /** The client crashed and restarted: it does no I/O until recovery has remounted it. */
    private boolean clientRestarting;
    /** Probability that a recovery query or read is lost (then recovery retries). */
    private final double recoveryLoss;
    /** The Master also hands the new replicas forged recovery proofs (they must refuse them). */
    private final boolean forgingMaster;
    final boolean forceFaults;

    private final PriorityQueue<Event> queue = new PriorityQueue<>();
    private long now;
    private long eventSeq;
    long messages;
    int recoveries;
    long epoch;
    private long lastProgress;
    private long lastGetProgress;
    private boolean recoveryRequested;
    private int ackedBatches;
    /** Batch id -> {first seq, last seq} of the current client session. */
    private final Map<Long, long[]> batchSeqs = new HashMap<>();
    /** Batches the client sent a malformed (but client-signed) sub-batch for. */
    private final Set<Long> malformedBatches = new HashSet<>();
    /** Lowest seq of a batch the client was told failed since the last remount (Long.MAX_VALUE: none). */
    private long minFailedSeq = Long.MAX_VALUE;
    /** Probability that the client also sends a malformed sub-batch for a batch it submits. */
    private final double malformedClient;
    private final int targetBatches;
    private final double getProbability;
    private final Set<Long> pendingGets = new HashSet<>();
    private final List<Long> finalGets = new ArrayList<>();
    private boolean finalPhase;
    private boolean finished;
    private long checkedCommitted;
    private final Map<String, DurableScan> scans = new HashMap<>();
    private final Map<NodeId, Long> checkedApplied = new HashMap<>();
    private final StringBuilder description = new StringBuilder();
    private final Set<Fault> faultMenu;

    private record Event(long time, long seq, Runnable action) implements Comparable<Event> {
        @Override
        public int compareTo(Event o) {
            return time != o.time ? Long.compare(time, o.time) : Long.compare(seq, o.seq);
        }
    }

    /** A physical machine: a region server + DataNode (with its witness store), or a standalone witness. */
    final class Machine {
        final int num;
        final NodeId rsId;
        final NodeId storeId;
        final boolean witnessOnly;
        final Fault fault;
        boolean up = true;
        boolean retired;
        final InMemoryReplicaDisk disk;
        /** RS_CRASH_STOP: the region server is gone for good, the DataNode and store still serve. */
        boolean rsCrashed;
        final InMemoryCertificateStore certs = new InMemoryCertificateStore();
        WitnessLog witness;
        RegionReplica replica;
        RrsConfig hosting;

        Machine(int num, boolean witnessOnly, Fault fault) {
            this.num = num;
            this.witnessOnly = witnessOnly;
            this.fault = fault;
            this.disk = fault == Fault.CORRUPT_CHECKPOINT ? new InMemoryReplicaDisk() {
                @Override
                public void writeSnapshot(RegionSnapshot snap) {
                    Map<Long, byte[]> blocks = new HashMap<>(snap.blocks());
                    byte[] junk = new byte[cfg.blockSize()];
                    junk[0] = 0x42;
                    blocks.put(0L, junk);
                    super.writeSnapshot(new RegionSnapshot(snap.generation(), snap.throughIndex(), snap.lastSeq(),
                            blocks, snap.rootRecord()));
                }

                @Override
                public void writeCheckpoint(long generation, long throughIndex, long lastSeq, Map<Long, byte[]> changed,
                                            io.salus.core.merkle.VolumeRootRecord rootRecord) {
                    Map<Long, byte[]> blocks = new HashMap<>(changed);
                    byte[] junk = new byte[cfg.blockSize()];
                    junk[0] = 0x42;
                    blocks.put(0L, junk);
                    super.writeCheckpoint(generation, throughIndex, lastSeq, blocks, rootRecord);
                }
            } : new InMemoryReplicaDisk();
            this.rsId = witnessOnly ? null : NodeId.of("rs" + num);
            this.storeId = NodeId.of((witnessOnly ? "w" : "dn") + num);
            if (rsId != null) {
                register(rsId);
            }
            register(storeId);
            newWitnessLog();
        }

        void newWitnessLog() {
            witness = new WitnessLog(signers.get(storeId), dir, certs, (region, gen) -> {
                RrsConfig c = membership.config(region, gen);
                return c == null ? null : c.replicaSet();
            }, cfg.mutations());
        }

        boolean correct() {
            return fault == Fault.NONE;
        }

        /** The DataNode and its witness store are correct (a stopped region server leaves them so). */
        boolean storeCorrect() {
            return fault == Fault.NONE || fault == Fault.RS_CRASH_STOP;
        }
    }

    final class SimMembership implements Membership {
        final Map<Integer, RrsConfig> current = new HashMap<>();
        final Map<RegionId, Map<Long, RrsConfig>> all = new HashMap<>();

        @Override
        public RrsConfig current(int region) {
            return current.get(region);
        }

        @Override
        public RrsConfig config(RegionId region, long generation) {
            Map<Long, RrsConfig> m = all.get(region);
            return m == null ? null : m.get(generation);
        }

        void install(RrsConfig c) {
            current.put(c.region().index(), c);
            all.computeIfAbsent(c.region(), k -> new HashMap<>()).put(c.generation(), c);
        }
    }

    private static final class DurableScan {
        long nextIndex = 0;
        final Set<Long> seqs = new HashSet<>();
    }

    SalusSimulation(long seed, Set<Mutation> mutations) {
        this(seed, mutations, EnumSet.allOf(Fault.class), false);
    }

    /**
     * @param faultMenu   faults the scenario may draw from
     * @param forceFaults every RRS gets two faulty machines (mutation tests)
     */
    SalusSimulation(long seed, Set<Mutation> mutations, Set<Fault> faultMenu, boolean forceFaults) {
        this(seed, mutations, faultMenu, forceFaults, null);
    }

    SalusSimulation(long seed, Set<Mutation> mutations, Set<Fault> faultMenu, boolean forceFaults,
                    SignatureScheme schemeOverride) {
        this(seed, mutations, faultMenu, forceFaults, schemeOverride, null);
    }

    /** One seed of a named {@link Scenario}. */
    SalusSimulation(long seed, Scenario scenario) {
        this(seed, Set.of(), scenario.faults(), false, null, scenario);
    }

    private final Scenario scenario;

    private SalusSimulation(long seed, Set<Mutation> mutations, Set<Fault> faultMenu, boolean forceFaults,
                            SignatureScheme schemeOverride, Scenario scenario) {
        this.seed = seed;
        this.scenario = scenario;
        this.rnd = new Random(seed);
        this.faultMenu = faultMenu;
        this.forceFaults = forceFaults;
        int regions = 2 + rnd.nextInt(2);
        int perRegion = 8;
        long blocks = (long) regions * perRegion - rnd.nextInt(3);
        HashAlgorithm alg = rnd.nextInt(10) == 0 ? HashAlgorithm.BLAKE3 : HashAlgorithm.SHA256;
        ProtocolConfig c = new ProtocolConfig(VOLUME, 32, alg, RegionLayout.ofRegionSize(blocks, perRegion),
                mutations.isEmpty() ? Set.of() : EnumSet.copyOf(mutations), 4); // checkpoints every 4 entries:
        // the simulated runs are short, and checkpoints, GC and catch-up are what they exercise
        this.cfg = c;
        int s = rnd.nextInt(100);
        this.scheme = schemeOverride != null ? schemeOverride
                : s < 95 ? SignatureScheme.WEAK_CRC32C : SignatureScheme.HMAC_SHA256;
        this.dir = new KeyDirectory(scheme);
        register(clientId);
        this.router = new MessageRouter(rnd);
        if (rnd.nextInt(10) < 3) {
            router.maxDelay = 1 + rnd.nextInt(3);
        } else {
            router.drop = rnd.nextDouble() * 0.06;
            router.duplicate = rnd.nextDouble() * 0.05;
            router.corrupt = rnd.nextDouble() * 0.04;
            router.maxDelay = 1 + rnd.nextInt(25);
        }
        this.oracle = new Oracle(cfg);
        this.targetBatches = 4 + rnd.nextInt(6);
        this.getProbability = rnd.nextDouble() * 0.5;
        this.malformedClient = scenario != null ? (scenario.malformed() ? 0.3 : 0)
                : faultMenu.contains(Fault.NONE) && rnd.nextInt(10) == 0 ? 0.2 : 0;
        if (malformedClient > 0) {
            description.append(" malformedClient");
        }
        description.append(String.format("regions=%d blocks=%d %s %s drop=%.3f dup=%.3f corrupt=%.3f delay<=%d",
                regions, blocks, alg, scheme, router.drop, router.duplicate, router.corrupt, router.maxDelay));
        for (int r = 0; r < regions; r++) {
            RrsConfig rc = allocate(r, 0, true);
            RegionSnapshot base = RegionSnapshot.empty(0, RegionLogRecovery.emptyVolumeRoot(cfg));
            startReplicas(rc, base);
        }
        this.clientPipeline = 1 + rnd.nextInt(4);
        this.client = newClient();
        boolean adversarial = scenario == null && faultMenu.size() > 1;
        this.recoveryLoss = scenario != null && scenario.recoveryLoss() ? 0.05 + rnd.nextDouble() * 0.25
                : adversarial && rnd.nextInt(10) < 3 ? rnd.nextDouble() * 0.3 : 0;
        this.forgingMaster = scenario != null ? scenario.forgingMaster() : adversarial && rnd.nextInt(10) < 2;
        if (recoveryLoss > 0) {
            description.append(String.format(" recoveryLoss=%.2f", recoveryLoss));
        }
        if (forgingMaster) {
            description.append(" forgingMaster");
        }
        if (scenario != null ? scenario.clientCrash() : adversarial && rnd.nextInt(10) < 2) {
            long at = rnd.nextInt((int) FAULT_PHASE_END);
            schedule(at, this::clientCrash);
            description.append(" clientCrash@").append(at);
        }
        if (rnd.nextInt(10) < 3) {
            int crashes = 1 + rnd.nextInt(3);
            for (int i = 0; i < crashes; i++) {
                long at = rnd.nextInt((int) FAULT_PHASE_END);
                long dur = 20 + rnd.nextInt(400);
                schedule(at, () -> transientCrash(dur));
            }
            description.append(" transientCrashes=").append(crashes);
            stats.merge("fault:TRANSIENT_CRASH", crashes, Integer::sum);
        }
    }

    private VolumeClient newClient() {
        return new VolumeClient(cfg, clientId, signers.get(clientId), dir, membership,
                (to, m) -> send(clientId, to, m), new ClientListener() {
                    @Override
                    public void putSucceeded(long batchId, long firstSeq, long lastSeq, List<Certificate> certs) {
                        onPutSucceeded(firstSeq, lastSeq, certs);
                    }

                    @Override
                    public void putFailed(long batchId) {
                        onPutFailed(batchId);
                    }

                    @Override
                    public void recoveryNeeded(String reason) {
                        recoveryRequested = true;
                    }

                    @Override
                    public void getSucceeded(long requestId, long block, byte[] data) {
                        onGet(requestId, block, data);
                    }
                }, clientPipeline, RETRANSMIT);
    }

    /** Table 3.1 "client crash and restart": memory lost; the restarted driver recovers and mounts. */
    private void clientCrash() {
        if (finished || now >= FAULT_PHASE_END) {
            return;
        }
        count("fault:CLIENT_CRASH_RESTART");
        VolumeClient dead = client;
        client = newClient(); // the old instance is gone: its retransmissions stop, replies go to the new one
        clientRestarting = true;
        recoveryRequested = true;
        if (dead.outstandingBatches() == 0) {
            lastProgress = now;
        }
    }

    private void register(NodeId id) {
        NodeKeys k = NodeKeys.deterministic(scheme, id, seed);
        signers.put(id, k.signer());
        dir.register(k);
    }

    // ------------------------------------------------------------------ topology

    private Machine newMachine(boolean witnessOnly, Fault f) {
        Machine m = new Machine(machines.size(), witnessOnly, f);
        machines.add(m);
        byNode.put(m.storeId, m);
        if (m.rsId != null) {
            byNode.put(m.rsId, m);
        }
        if (f == Fault.RS_CRASH_STOP) {
            schedule(rnd.nextInt((int) FAULT_PHASE_END), () -> {
                m.rsCrashed = true;
                m.replica = null;
            });
        } else if (f == Fault.CRASH_STOP) {
            schedule(rnd.nextInt((int) FAULT_PHASE_END), () -> {
                m.up = false;
                m.replica = null;
            });
        } else if (f == Fault.DELETE_FILES) {
            schedule(rnd.nextInt((int) FAULT_PHASE_END), m.disk::deleteAll);
        }
        return m;
    }

    private static final Fault[] RS_FAULTS = {Fault.CRASH_STOP, Fault.CORRUPT_DISK, Fault.SIGN_WRONG,
        Fault.WITHHOLD_FORWARD, Fault.REORDER_FORWARD, Fault.MEMORY_CORRUPT, Fault.LIAR, Fault.CORRUPT_GET, Fault.LIES_NO_NEXT, Fault.WRONG_POSITION,
        Fault.DELETE_FILES, Fault.ACK_WITHOUT_STORE, Fault.VOTES_NO, Fault.LEADER_WRONG_DECISION,
        Fault.LEADER_EQUIVOCATES, Fault.STALE_PROOF, Fault.CORRUPT_CHECKPOINT, Fault.RS_CRASH_STOP};
    private static final Fault[] WITNESS_FAULTS = {Fault.CRASH_STOP, Fault.LIES_NO_NEXT, Fault.WRONG_POSITION,
        Fault.ACK_WITHOUT_STORE, Fault.STALE_PROOF};

    private Fault pick(Fault[] options) {
        List<Fault> allowed = new ArrayList<>();
        for (Fault f : options) {
            if (faultMenu.contains(f)) {
                allowed.add(f);
            }
        }
        return allowed.isEmpty() ? Fault.NONE : allowed.get(rnd.nextInt(allowed.size()));
    }

    /** Allocates fresh machines for a region's generation; at most two of the five are faulty. */
    private RrsConfig allocate(int region, long gen, boolean allowFaults) {
        Fault[] faults = new Fault[5];
        java.util.Arrays.fill(faults, Fault.NONE);
        if (allowFaults) {
            int k = scenario != null && scenario.faultyPerRrs() >= 0 ? scenario.faultyPerRrs()
                    : forceFaults ? 2 : new int[] {0, 0, 0, 0, 1, 1, 1, 2, 2, 2}[rnd.nextInt(10)];
            List<Integer> slots = new ArrayList<>(List.of(0, 1, 2, 3, 4));
            Collections.shuffle(slots, rnd);
            if (k == 3) { // three benign region-server crashes: exactly the three region servers
                slots = List.of(0, 1, 2);
            }
            for (int i = 0; i < k; i++) {
                int slot = slots.get(i);
                faults[slot] = pick(slot < 3 ? RS_FAULTS : WITNESS_FAULTS);
            }
        }
        List<NodeId> reps = new ArrayList<>();
        List<NodeId> stores = new ArrayList<>();
        List<NodeId> wits = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            Machine m = newMachine(false, faults[i]);
            reps.add(m.rsId);
            stores.add(m.storeId);
        }
        for (int i = 3; i < 5; i++) {
            wits.add(newMachine(true, faults[i]).storeId);
        }
        for (Fault f : faults) {
            if (f != Fault.NONE) {
                description.append(" r").append(region).append("g").append(gen).append(':').append(f);
                count("fault:" + f);
            }
        }
        RrsConfig c = gen == 0 ? new RrsConfig(new RegionId(VOLUME, region), gen, reps, stores, wits)
                : membership.current(region).remap(reps, stores, wits);
        membership.install(c);
        return c;
    }

    private void startReplicas(RrsConfig c, RegionSnapshot base) {
        for (NodeId rep : c.replicas()) {
            Machine m = byNode.get(rep);
            m.hosting = c;
            if (base.generation() > 0) {
                m.disk.writeSnapshot(base);
            }
            if (m.up) {
                m.replica = newReplica(m, base);
            }
        }
    }

    private RegionReplica newReplica(Machine m, RegionSnapshot base) {
        RegionReplica r = new RegionReplica(cfg, m.hosting, m.rsId, clientId, signers.get(m.rsId), dir, membership,
                (to, msg) -> send(m.rsId, to, msg), m.disk, coord, hooksFor(m), base);
        RrsConfig hosting = m.hosting;
        // a replica catching up reads LOG_ENTRY certificates from its region's holders that are up, without sealing
        r.logEntryReader((region, generation, index, proves) -> {
            for (NodeId h : hosting.metadataHolders()) {
                Machine x = byNode.get(h);
                io.salus.core.cert.Certificate c = x == null || !x.up ? null
                        : x.certs.get(region, generation, index).orElse(null);
                if (c != null && proves.test(c)) {
                    return c;
                }
            }
            return null;
        });
        return r;
    }

    private ReplicaHooks hooksFor(Machine m) {
        return switch (m.fault) {
            case CORRUPT_DISK -> new ReplicaHooks() {
                @Override
                public byte[] onDiskWrite(byte[] entry) {
                    byte[] b = entry.clone();
                    b[b.length / 2] ^= 0x10;
                    return b;
                }
            };
            case SIGN_WRONG -> new ReplicaHooks() {
                @Override
                public Hash digestToSign(Hash digest) {
                    return HashAlgorithm.SHA256.hash(digest.bytes());
                }
            };
            case WITHHOLD_FORWARD -> new ReplicaHooks() {
                @Override
                public boolean forward(SubBatch sb) {
                    return false;
                }
            };
            case LIAR -> new ReplicaHooks() {
                @Override
                public boolean earlyVote() {
                    return true;
                }

                @Override
                public boolean earlyPutSuccess() {
                    return true;
                }
            };
            case REORDER_FORWARD -> new ReplicaHooks() {
                private final Set<Long> delayed = new HashSet<>();

                @Override
                public boolean forward(SubBatch sb) {
                    return sb.batchId() % 2 == 0 || !delayed.add(sb.batchId());
                }
            };
            case MEMORY_CORRUPT -> new ReplicaHooks() {
                @Override
                public byte[] onApply(byte[] data) {
                    data[data.length - 1] ^= 0x40;
                    return data;
                }
            };
            case LEADER_WRONG_DECISION -> new ReplicaHooks() {
                @Override
                public boolean decideEarly() {
                    return true;
                }

                @Override
                public boolean decisionFor(long batchId, NodeId recipient, boolean decided) {
                    return batchId % 2 != 0 && decided;
                }
            };
            case LEADER_EQUIVOCATES -> new ReplicaHooks() {
                @Override
                public boolean decisionFor(long batchId, NodeId recipient, boolean decided) {
                    return (recipient.hashCode() + batchId) % 2 == 0 ? decided : !decided;
                }
            };
            case VOTES_NO -> new ReplicaHooks() {
                @Override
                public boolean voteYes(SubBatch sb) {
                    return sb.batchId() % 3 != 1;
                }
            };
            case CORRUPT_GET -> new ReplicaHooks() {
                @Override
                public byte[] onGetReply(byte[] data) {
                    byte[] b = data.clone();
                    b[0] ^= 0x01;
                    return b;
                }
            };
            default -> ReplicaHooks.NONE;
        };
    }

    // ------------------------------------------------------------------ event loop and network

    private void schedule(long at, Runnable r) {
        queue.add(new Event(Math.max(at, now), eventSeq++, r));
    }

    private void send(NodeId from, NodeId to, Message m) {
        messages++;
        router.route(m, (delay, msg) -> schedule(now + delay, () -> deliver(from, to, msg)));
    }

    private void deliver(NodeId from, NodeId to, Message m) {
        if (to.equals(clientId)) {
            client.receive(from, m);
            return;
        }
        Machine mach = byNode.get(to);
        if (mach == null || !mach.up || mach.retired) {
            return;
        }
        if (to.equals(mach.storeId)) {
            if (m instanceof Message.LogCertMsg l) {
                onStore(mach, l.tentative());
            } else if (m instanceof Message.CheckpointCert c) {
                mach.witness.truncate(c.checkpoint()); // GC: only a CHECKPOINT certificate that verifies drops
            }
        } else if (mach.replica != null) {
            mach.replica.receive(from, m);
        }
    }

    private void onStore(Machine m, Certificate c) {
        if (c.type() != CertType.TENTATIVE_LOG_ENTRY && c.type() != CertType.LOG_ENTRY) {
            return;
        }
        Statement.LogEntry st = c.statement(Statement.LogEntry.class);
        boolean already = m.certs.get(st.region(), st.generation(), st.index()).isPresent();
        WitnessLog.Offer o = m.fault == Fault.ACK_WITHOUT_STORE ? WitnessLog.Offer.STORED : m.witness.offer(c);
        if (o != WitnessLog.Offer.STORED) {
            return;
        }
        RrsConfig rc = membership.config(st.region(), st.generation());
        if (rc == null) {
            return;
        }
        Hash digest = m.fault == Fault.ACK_WITHOUT_STORE ? st.digest()
                : m.certs.get(st.region(), st.generation(), st.index()).get().statement(Statement.LogEntry.class)
                        .digest();
        byte[] sig = signers.get(m.storeId).sign(Message.StoreAck.signedBytes(st.region().index(), st.generation(),
                st.index(), digest));
        Message.StoreAck ack = new Message.StoreAck(st.region().index(), st.generation(), st.index(), digest, sig);
        if (already && c.type() == CertType.TENTATIVE_LOG_ENTRY) {
            send(m.storeId, c.signatures().get(0).signer(), ack); // a retransmission: answer its sender only
            return;
        }
        for (NodeId r : rc.replicas()) {
            send(m.storeId, r, ack);
        }
    }

    private void transientCrash(long duration) {
        List<Machine> candidates = new ArrayList<>();
        for (Machine m : machines) {
            if (m.correct() && m.up && !m.retired) {
                candidates.add(m);
            }
        }
        if (candidates.isEmpty()) {
            return;
        }
        Machine m = candidates.get(rnd.nextInt(candidates.size()));
        m.up = false;
        m.replica = null; // memory lost; the disk and the certificate store are durable
        m.witness.dropPending();
        schedule(now + duration, () -> restart(m));
    }

    private void restart(Machine m) {
        if (m.up || m.retired || m.fault == Fault.CRASH_STOP) {
            return;
        }
        m.up = true;
        m.newWitnessLog();
        if (m.hosting != null && !m.rsCrashed) {
            RrsConfig h = m.hosting;
            try {
                // the restart serves only the checkpoint the latest CHECKPOINT certificate vouches for
                m.replica = newReplica(m, RegionReplica.verifiedBase(cfg, h, dir, membership, m.disk, coord));
            } catch (io.salus.core.protocol.recovery.RecoveryException e) {
                count("restart refused");
                // stays down as a replica: its region's clients retry, then recovery replaces it
            }
        }
    }

    // ------------------------------------------------------------------ workload

    private void workloadStep() {
        if (finished) {
            return;
        }
        if (client.needsRemount() != null || clientRestarting) {
            schedule(now + 10, this::workloadStep); // the client refuses I/O until recovery remounts it
            return;
        }
        if (!finalPhase && ackedBatches >= targetBatches && client.outstandingBatches() == 0) {
            finalPhase = true;
            for (long b = 0; b < cfg.layout().volumeBlocks(); b++) {
                finalGets.add(b);
            }
        }
        if (finalPhase) {
            if (pendingGets.isEmpty()) {
                if (finalGets.isEmpty()) {
                    finished = true;
                    return;
                }
                int n = Math.min(4, finalGets.size());
                for (int i = 0; i < n; i++) {
                    pendingGets.add(client.get(finalGets.remove(finalGets.size() - 1)));
                }
            }
        } else {
            if (ackedBatches + client.outstandingBatches() < targetBatches && rnd.nextInt(3) > 0) {
                int n = 1 + rnd.nextInt(4);
                List<BlockWrite> ws = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    byte[] d = new byte[cfg.blockSize()];
                    rnd.nextBytes(d);
                    ws.add(new BlockWrite(rnd.nextInt((int) cfg.layout().volumeBlocks()), d));
                }
                long first = client.nextSeq();
                long id = client.submit(ws);
                if (id >= 0) {
                    oracle.issue(first, ws);
                    batchSeqs.put(id, new long[] {first, first + ws.size() - 1});
                    if (malformedClient > 0 && rnd.nextDouble() < malformedClient) {
                        sendMalformed(id, first, ws);
                    }
                }
            }
            if (rnd.nextDouble() < getProbability && pendingGets.size() < 3) {
                pendingGets.add(client.get(rnd.nextInt((int) cfg.layout().volumeBlocks())));
            }
        }
        schedule(now + 10, this::workloadStep);
    }

    private void tickAll() {
        if (finished) {
            return;
        }
        for (Machine m : machines) {
            if (m.up && !m.retired && m.replica != null) {
                m.replica.tick();
            }
        }
        client.tick(now);
        if (client.outstandingBatches() == 0) {
            lastProgress = now;
        }
        if (client.outstandingGets() == 0) {
            lastGetProgress = now;
        }
        // batches: the client itself asks for recovery (proof of misbehaviour, or retries without
        // progress, §3.3.2 step 4); GETs are retried at other replicas and stall here at worst
        if (recoveryRequested || now - lastGetProgress > STALL) {
            recoveryRequested = false;
            recover();
        }
        schedule(now + TICK, this::tickAll);
    }

    private void onPutSucceeded(long firstSeq, long lastSeq, List<Certificate> certs) {
        lastProgress = now;
        ackedBatches++;
        for (long s = oracle.baseSeq + 1; s <= lastSeq; s++) {
            if (!durable(s)) {
                throw new SimulationViolation("no-lost-put-success", "client got PUT_SUCCESS through seq " + lastSeq
                        + " at t=" + now + " but seq " + s + " is not durably prepared (recoverable)");
            }
        }
        oracle.ackedMax = Math.max(oracle.ackedMax, lastSeq);
    }

    /**
     * A client with a bug: next to the real sub-batch it sends, for the same batch, a client-signed
     * sub-batch whose prevNum chain is broken (a correct replica votes NO: the batch aborts), and
     * garbage that must be dropped (unsigned, wrong region, block out of range, short data).
     */
    private void sendMalformed(long batchId, long first, List<BlockWrite> ws) {
        count("fault:MALFORMED_CLIENT_REQUEST");
        malformedBatches.add(batchId);
        long block = ws.get(0).block();
        int region = oracle.regionOf(block);
        int leader = region;
        byte[] d = ws.get(0).data();
        Hash h = cfg.hash().leafHash(d);
        Hash root = cfg.hash().hash(d);
        List<io.salus.core.protocol.message.Put> broken = List.of(
                new io.salus.core.protocol.message.Put(first, 0, block, d, h, root),
                new io.salus.core.protocol.message.Put(first + 1, 0, block, d, h, root));
        SubBatch bad = new SubBatch(VOLUME, region, batchId, leader, broken, null);
        Signer cs = signers.get(clientId);
        NodeId primary = membership.current(region).primary();
        send(clientId, primary, new Message.SubBatchMsg(bad.withSignature(cs.sign(bad.signedBytes()))));
        send(clientId, primary, new Message.SubBatchMsg(bad)); // unsigned
        SubBatch misrouted = new SubBatch(VOLUME, (region + 1) % cfg.regionCount(), batchId, leader, broken, null);
        send(clientId, primary, new Message.SubBatchMsg(misrouted.withSignature(cs.sign(misrouted.signedBytes()))));
        long out = cfg.layout().volumeBlocks() + 3;
        SubBatch range = new SubBatch(VOLUME, region, batchId, leader, List.of(
                new io.salus.core.protocol.message.Put(first, 0, out, d, h, root)), null);
        send(clientId, primary, new Message.SubBatchMsg(range.withSignature(cs.sign(range.signedBytes()))));
        byte[] shortData = new byte[3];
        SubBatch len = new SubBatch(VOLUME, region, batchId, leader, List.of(new io.salus.core.protocol.message.Put(
                first, 0, block, shortData, cfg.hash().leafHash(shortData), root)), null);
        send(clientId, primary, new Message.SubBatchMsg(len.withSignature(cs.sign(len.signedBytes()))));
    }

    /** The client was told a batch failed: classify the abort and remember the lowest failed seq. */
    private void onPutFailed(long batchId) {
        long[] seqs = batchSeqs.get(batchId);
        if (seqs == null) {
            throw new SimulationViolation("oracle", "putFailed for unknown batch " + batchId);
        }
        boolean first = minFailedSeq == Long.MAX_VALUE;
        count(!first ? "abort:FOLLOWS_ABORTED_BATCH" : malformedBatches.contains(batchId)
                ? "abort:MALFORMED_CLIENT_REQUEST" : "abort:NO_VOTE");
        minFailedSeq = Math.min(minFailedSeq, seqs[0]);
        if (seqs[0] <= oracle.ackedMax) {
            throw new SimulationViolation("no-lost-put-success", "batch " + batchId + " failed but seq " + seqs[0]
                    + " is at or below the acknowledged seq " + oracle.ackedMax);
        }
    }

    private void onGet(long requestId, long block, byte[] data) {
        lastGetProgress = now;
        pendingGets.remove(requestId);
        if (!oracle.matches(block, data)) {
            throw new SimulationViolation("get-freshness", "GET of block " + block + " at t=" + now
                    + " returned data that is not the latest PUT issued to it");
        }
    }

    // ------------------------------------------------------------------ recovery (Master)

    private RegionLogRecovery.MetadataHolder holder(Machine m) {
        return new RegionLogRecovery.MetadataHolder() {
            @Override
            public NodeId id() {
                return m.storeId;
            }

            @Override
            public Certificate query(RegionId region, long gen, long index) {
                if (!m.up) {
                    return null;
                }
                if (recoveryLoss > 0 && rnd.nextDouble() < recoveryLoss) {
                    count("recovery:lostMessage");
                    return null; // the query or its answer is lost
                }
                if (m.fault == Fault.STALE_PROOF) {
                    Optional<Certificate> older = gen > 0 ? m.certs.get(region, gen - 1, index) : Optional.empty();
                    if (older.isPresent()) {
                        return older.get(); // a genuine LOG_ENTRY of the previous generation
                    }
                    RegionId other = new RegionId(VOLUME, (region.index() + 1) % cfg.regionCount());
                    return m.witness.query(index % 2 == 0 ? region : other, index % 2 == 0 ? gen + 1 : gen, index);
                }
                if (m.fault == Fault.LIES_NO_NEXT) {
                    return Certificate.sign(CertType.NO_NEXT_ENTRY, new Statement.NoNextEntry(region, gen, index),
                            signers.get(m.storeId));
                }
                if (m.fault == Fault.WRONG_POSITION) {
                    Optional<Certificate> next = m.certs.get(region, gen, index + 1);
                    if (next.isPresent()) {
                        return next.get();
                    }
                }
                return m.witness.query(region, gen, index);
            }
        };
    }

    private RegionLogRecovery.DataSource dataSource(Machine m) {
        return new RegionLogRecovery.DataSource() {
            @Override
            public byte[] readEntry(long gen, long index) {
                if (recoveryLoss > 0 && rnd.nextDouble() < recoveryLoss) {
                    count("recovery:lostMessage");
                    return null;
                }
                return m.up ? m.disk.read(gen, index) : null;
            }

            @Override
            public RegionSnapshot readSnapshot(long gen, long throughIndex) {
                return m.up ? m.disk.readSnapshot(gen, throughIndex) : null;
            }

            @Override
            public List<Certificate> readDecisions(long gen) {
                return m.up ? m.disk.decisions(gen) : null;
            }
        };
    }

    private void recover() {
        recoveries++;
        count("recovery:run");
        epoch++;
        if (recoveries > 60) {
            throw new SimulationViolation("liveness", "more than 60 recoveries without completing the workload");
        }
        for (Machine m : machines) {
            if (!m.up && !m.retired && m.fault != Fault.CRASH_STOP) {
                restart(m); // recovery waits for restarting servers
            }
        }
        RecoveryOrchestrator master = new RecoveryOrchestrator(cfg, dir, clientId, membership, coord,
                recoveryLoss > 0 ? 40 : 1);
        SimCluster cluster = new SimCluster();
        Map<Integer, RegionLogRecovery.RecoveredLog> logs;
        try {
            logs = master.recoverLogs(cluster);
        } catch (RecoveryException e) {
            // lost answers are a retry, not a guess; without loss the fault bound guarantees success
            throw new SimulationViolation("recovery-liveness", "with <=2 faulty per RRS: " + e.getMessage());
        } finally {
            stats.merge("recovery:retry", master.retries(), Integer::sum);
        }
        VolumeRecovery.Rebuilt rb;
        try {
            rb = master.rebuild(epoch, logs);
        } catch (RecoveryException e) {
            Optional<io.salus.core.protocol.recovery.Coordination.Lcp> agreed = coord.lcp(epoch);
            if (agreed.isPresent() && agreed.get().seq() < oracle.ackedMax) {
                throw new SimulationViolation("no-lost-put-success", "recovery LCP " + agreed.get().seq()
                        + " drops PUTs that got PUT_SUCCESS (acked through " + oracle.ackedMax + "); " + e.getMessage());
            }
            if (agreed.isPresent()) {
                // judge the recovered state independently of the protocol's own root check
                long l = agreed.get().seq();
                Map<Long, byte[]> want = oracle.stateAt(Math.min(l, oracle.issuedMax()));
                for (Map.Entry<Integer, RegionLogRecovery.RecoveredLog> le : logs.entrySet()) {
                    RegionSnapshot s = VolumeRecovery.rebuildRegion(cfg, le.getValue(), l, 0);
                    if (!s.regionRoot(cfg.hash(), cfg.blockSize(), cfg.layout())
                            .equals(oracle.regionRootOfState(want, le.getKey()))) {
                        throw new SimulationViolation("ordered-commit", "recovered region " + le.getKey()
                                + " is not the client-ordered prefix through LCP seq " + l
                                + " (the protocol's own root check refused it too: " + e.getMessage() + ")");
                    }
                }
            }
            throw new SimulationViolation("recovery-root-check", e.getMessage());
        }
        long lcp = rb.lcp().seq();
        if (lcp >= minFailedSeq) {
            throw new SimulationViolation("failed-write-invisible", "recovery LCP " + lcp + " includes seq "
                    + minFailedSeq + " of a batch the client was told failed (an aborted write came back)");
        }
        if (lcp < oracle.ackedMax) {
            throw new SimulationViolation("no-lost-put-success", "recovery LCP " + lcp
                    + " drops PUTs that got PUT_SUCCESS (acked through " + oracle.ackedMax + ")");
        }
        if (lcp > oracle.issuedMax()) {
            throw new SimulationViolation("ordered-commit", "LCP " + lcp + " beyond issued " + oracle.issuedMax());
        }
        Map<Long, byte[]> expected = oracle.stateAt(lcp);
        for (Map.Entry<Integer, RegionSnapshot> e : rb.regions().entrySet()) {
            Hash got = e.getValue().regionRoot(cfg.hash(), cfg.blockSize(), cfg.layout());
            if (!got.equals(oracle.regionRootOfState(expected, e.getKey()))) {
                throw new SimulationViolation("ordered-commit", "recovered region " + e.getKey()
                        + " is not the client-ordered prefix through seq " + lcp);
            }
        }
        try {
            master.adopt(rb, cluster);
        } catch (RecoveryException e) {
            throw new SimulationViolation("recovery-consent", e.getMessage());
        }
        Map<Integer, VolumeClient.RegionView> views = new HashMap<>();
        for (int r = 0; r < cfg.regionCount(); r++) {
            RegionSnapshot s = rb.regions().get(r);
            RegionReplica tmp = null;
            for (NodeId rep : membership.current(r).replicas()) {
                Machine m = byNode.get(rep);
                if (m.replica != null && m.correct()) {
                    tmp = m.replica;
                    break;
                }
            }
            if (tmp == null) {
                tmp = newReplica(byNode.get(membership.current(r).primary()), s);
            }
            views.put(r, new VolumeClient.RegionView(tmp.regionRoot(), tmp.rootRecord(), tmp.leafHashes(),
                    coord.latestCheckpoint(membership.current(r).region(),
                            Coordination.signedByItsGeneration(dir, membership)).orElse(null)));
        }
        try {
            client.mount(lcp, rb.lcp().root(), views);
        } catch (IllegalStateException e) {
            throw new SimulationViolation("mount", e.getMessage());
        }
        oracle.truncate(lcp);
        clientRestarting = false;
        minFailedSeq = Long.MAX_VALUE;
        batchSeqs.clear();
        malformedBatches.clear();
        pendingGets.clear();
        if (finalPhase) {
            finalPhase = false; // re-verify every block after the recovery
            finalGets.clear();
        }
        checkedCommitted = lcp;
        checkedApplied.clear();
        lastProgress = now;
        lastGetProgress = now;
    }

    /** The simulated cluster as the Master ({@link RecoveryOrchestrator}) sees it. */
    private final class SimCluster implements RecoveryOrchestrator.Cluster {
        @Override
        public List<RegionLogRecovery.MetadataHolder> holders(RrsConfig old) {
            List<RegionLogRecovery.MetadataHolder> holders = new ArrayList<>();
            for (NodeId h : old.metadataHolders()) {
                holders.add(holder(byNode.get(h)));
            }
            Collections.shuffle(holders, rnd);
            return holders;
        }

        @Override
        public List<RegionLogRecovery.DataSource> dataNodes(RrsConfig old) {
            List<RegionLogRecovery.DataSource> dns = new ArrayList<>();
            for (NodeId h : old.stores()) {
                dns.add(dataSource(byNode.get(h)));
            }
            Collections.shuffle(dns, rnd);
            return dns;
        }

        @Override
        public RrsConfig remap(RrsConfig old) {
            for (NodeId n : old.metadataHolders()) {
                Machine m = byNode.get(n);
                m.retired = true;
                m.replica = null;
            }
            return allocate(old.region().index(), old.generation() + 1, now < FAULT_PHASE_END);
        }

        @Override
        public Certificate endorse(NodeId replica, RrsConfig fresh, RegionLogRecovery.RecoveredLog log,
                                   io.salus.core.protocol.recovery.Coordination.Lcp lcp) throws RecoveryException {
            if (forgingMaster && replica.equals(fresh.replicas().get(0))) {
                forgeAndExpectRefusal(fresh, log, lcp);
            }
            return VolumeRecovery.endorse(cfg, dir, clientId, signers.get(replica), fresh, membership, log, lcp);
        }

        @Override
        public void start(RrsConfig fresh, RegionSnapshot state) {
            startReplicas(fresh, state);
        }
    }

    /**
     * A faulty Master hands a new replica a log truncated by one entry whose end is "proven" by the
     * old holders' genuine answers for another generation; a correct replica must refuse it.
     */
    private void forgeAndExpectRefusal(RrsConfig fresh, RegionLogRecovery.RecoveredLog log,
                                       io.salus.core.protocol.recovery.Coordination.Lcp lcp) {
        if (log.entries().isEmpty()) {
            return;
        }
        count("fault:FORGED_RECOVERY_PROOF");
        long cut = log.entries().get(log.entries().size() - 1).index();
        List<Certificate> end = new ArrayList<>();
        for (NodeId h : log.old().metadataHolders()) {
            Machine m = byNode.get(h);
            end.add(m.witness.query(log.old().region(), log.old().generation() + 7, cut));
        }
        expectRefusal(fresh, lcp, new RegionLogRecovery.RecoveredLog(log.old(), log.base(), log.baseCertificate(),
                log.entries().subList(0, log.entries().size() - 1), end),
                "a log truncated at index " + cut + " with end-of-log answers for another generation");
        // a base CHECKPOINT "signed" by the old metadata holders: the whole log wiped
        RegionLogRecovery.RecoveredEntry lastEntry = log.entries().get(log.entries().size() - 1);
        // (its root record is at its last seq, as an honest snapshot's is: only the signers are wrong)
        RegionSnapshot wiped = new RegionSnapshot(log.old().generation(), cut, lastEntry.subBatch().lastSeq(), Map.of(),
                new io.salus.core.merkle.VolumeRootRecord(lastEntry.subBatch().puts()
                        .get(lastEntry.subBatch().puts().size() - 1).volumeRoot(), lastEntry.subBatch().lastSeq()));
        List<Certificate> cpSigs = new ArrayList<>();
        List<Certificate> endAfter = new ArrayList<>();
        for (NodeId h : log.old().stores()) {
            cpSigs.add(Certificate.sign(CertType.TENTATIVE_CHECKPOINT, new Statement.Checkpoint(log.old().region(),
                    log.old().generation(), cut, wiped.lastSeq(), wiped.regionRoot(cfg.hash(), cfg.blockSize(),
                    cfg.layout()), wiped.rootRecord().root()), signers.get(h)));
        }
        for (NodeId h : log.old().metadataHolders()) {
            endAfter.add(byNode.get(h).witness.query(log.old().region(), log.old().generation(), cut + 1));
        }
        expectRefusal(fresh, lcp, new RegionLogRecovery.RecoveredLog(log.old(), wiped, Certificate.combine(cpSigs),
                List.of(), endAfter), "a base checkpoint signed by the metadata holders");
        // the first entry "proven" aborted by an ABORT the metadata holders signed
        RegionLogRecovery.RecoveredEntry e0 = log.entries().get(0);
        SubBatch sb = e0.subBatch();
        List<Certificate> abortSigs = new ArrayList<>();
        for (NodeId h : log.old().stores()) {
            abortSigs.add(Certificate.sign(CertType.TENTATIVE_ABORT, new Statement.Decision(false, VOLUME, sb.batchId(),
                    sb.firstSeq(), sb.lastSeq(), new RegionId(VOLUME, sb.leaderRegion()), log.old().generation()),
                    signers.get(h)));
        }
        List<RegionLogRecovery.RecoveredEntry> marked = new ArrayList<>(log.entries());
        marked.set(0, new RegionLogRecovery.RecoveredEntry(e0.index(), e0.logEntry(), e0.bytes(), sb,
                Certificate.combine(abortSigs)));
        if (!e0.aborted()) {
            expectRefusal(fresh, lcp, new RegionLogRecovery.RecoveredLog(log.old(), log.base(), log.baseCertificate(),
                    marked, log.endProof()), "an entry marked aborted by an ABORT the metadata holders signed");
        }
    }

    private void expectRefusal(RrsConfig fresh, io.salus.core.protocol.recovery.Coordination.Lcp lcp,
                               RegionLogRecovery.RecoveredLog forged, String what) {
        NodeId rep = fresh.replicas().get(0);
        try {
            VolumeRecovery.endorse(cfg, dir, clientId, signers.get(rep), fresh, membership, forged, lcp);
        } catch (RecoveryException expected) {
            return;
        }
        throw new SimulationViolation("forged-proof-refused", "a new replica endorsed " + what);
    }

    // ------------------------------------------------------------------ invariants

    /** True if seq's PUT is in the recoverable prefix of its region's current log (or checkpointed). */
    private boolean durable(long seq) {
        if (seq <= oracle.baseSeq) {
            return true;
        }
        long[] b = oracle.issuedBlocks.get(seq);
        if (b == null) {
            return false;
        }
        int region = oracle.regionOf(b[0]);
        RrsConfig rc = membership.current(region);
        Optional<Certificate> cp = coord.latestCheckpoint(rc.region(), Coordination.signedByItsGeneration(dir, membership));
        long fromIndex = 0;
        if (cp.isPresent()) {
            Statement.Checkpoint st = cp.get().statement(Statement.Checkpoint.class);
            if (st.generation() == rc.generation()) {
                if (seq <= st.lastSeq()) {
                    return true;
                }
                fromIndex = st.throughIndex() + 1;
            }
        }
        DurableScan scan = scans.computeIfAbsent(region + ":" + rc.generation(), k -> new DurableScan());
        scan.nextIndex = Math.max(scan.nextIndex, fromIndex);
        while (!scan.seqs.contains(seq)) {
            long idx = scan.nextIndex;
            Hash digest = null;
            boolean allCorrectHolders = true;
            for (NodeId h : rc.metadataHolders()) {
                Machine m = byNode.get(h);
                if (!m.storeCorrect()) {
                    continue;
                }
                Optional<Certificate> c = m.certs.get(rc.region(), rc.generation(), idx);
                if (c.isEmpty()) {
                    allCorrectHolders = false;
                    break;
                }
                digest = c.get().statement(Statement.LogEntry.class).digest();
            }
            if (!allCorrectHolders || digest == null) {
                return false;
            }
            SubBatch sb = null;
            for (NodeId d : rc.stores()) {
                Machine m = byNode.get(d);
                byte[] bytes = m.storeCorrect() ? m.disk.read(rc.generation(), idx) : null;
                if (bytes != null && cfg.hash().hash(bytes).equals(digest)) {
                    sb = SubBatch.decode(bytes);
                    break;
                }
            }
            if (sb == null) {
                return false;
            }
            sb.puts().forEach(p -> scan.seqs.add(p.seq()));
            scan.nextIndex++;
        }
        return true;
    }

    private void checkInvariants() {
        long maxCommitted = oracle.baseSeq;
        for (int r = 0; r < cfg.regionCount(); r++) {
            RrsConfig rc = membership.current(r);
            for (NodeId rep : rc.replicas()) {
                Machine m = byNode.get(rep);
                if (m.replica == null || !m.correct()) {
                    continue;
                }
                long applied = m.replica.appliedSeq();
                Long prev = checkedApplied.get(rep);
                if (prev == null || prev != applied) {
                    checkedApplied.put(rep, applied);
                    Hash expect = oracle.regionRootAt(r, applied);
                    if (expect == null || !expect.equals(m.replica.regionRoot())) {
                        throw new SimulationViolation("replicas-agree", "correct replica " + rep + " of region " + r
                                + " applied through seq " + applied + " but its state is not the client-ordered prefix");
                    }
                }
                maxCommitted = Math.max(maxCommitted, applied);
            }
        }
        if (maxCommitted > checkedCommitted) {
            for (long s = checkedCommitted + 1; s <= maxCommitted; s++) {
                if (!durable(s)) {
                    throw new SimulationViolation("ordered-commit", "seq " + maxCommitted
                            + " committed at t=" + now + " while seq " + s + " (<= it) is not durably prepared");
                }
            }
            checkedCommitted = maxCommitted;
        }
    }

    // ------------------------------------------------------------------ run

    Result run() {
        SimulationViolation violation = null;
        try {
            schedule(0, this::workloadStep);
            schedule(TICK, this::tickAll);
            schedule(FAULT_PHASE_END, () -> {
                router.heal();
                for (Machine m : machines) {
                    if (!m.up && !m.retired && m.fault != Fault.CRASH_STOP) {
                        restart(m);
                    }
                }
            });
            while (!finished && !queue.isEmpty()) {
                Event e = queue.poll();
                if (e.time > DEADLINE) {
                    break;
                }
                now = e.time;
                e.action.run();
                checkInvariants();
            }
            if (!finished) {
                throw new SimulationViolation("liveness", "workload not complete by t=" + DEADLINE + " (acked "
                        + ackedBatches + "/" + targetBatches + " batches, " + recoveries + " recoveries, client "
                        + client + ")");
            }
        } catch (SimulationViolation v) {
            violation = v;
        } catch (RuntimeException e) {
            violation = new SimulationViolation("crash", e + " at " + e.getStackTrace()[0]);
            violation.initCause(e);
        }
        return new Result(seed, violation, recoveries, messages, ackedBatches, description.toString(), stats);
    }
}
