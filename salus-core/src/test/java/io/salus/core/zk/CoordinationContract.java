package io.salus.core.zk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import io.salus.core.cert.Statement;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.NodeKeys;
import io.salus.core.crypto.SignatureScheme;
import io.salus.core.merkle.Hash;
import io.salus.core.merkle.HashAlgorithm;
import io.salus.core.protocol.recovery.Coordination;
import io.salus.core.protocol.recovery.Coordination.Lcp;
import io.salus.core.protocol.recovery.Coordination.RegionReport;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The contract of {@link Coordination}, run against every implementation. Each test gets a fresh,
 * empty store from {@link #newStore()}; {@link #peer(Coordination)} is a second handle on the same
 * store (for ZooKeeper: another client and session), used for racing writers.
 */
abstract class CoordinationContract {
    static final RegionId R0 = new RegionId("vol1", 0);
    static final RegionId R1 = new RegionId("vol1", 1);
    static final List<NodeKeys> KEYS = List.of(
            NodeKeys.deterministic(SignatureScheme.WEAK_CRC32C, NodeId.of("rs0"), 1),
            NodeKeys.deterministic(SignatureScheme.WEAK_CRC32C, NodeId.of("rs1"), 1),
            NodeKeys.deterministic(SignatureScheme.WEAK_CRC32C, NodeId.of("rs2"), 1));

    static final io.salus.core.crypto.KeyDirectory DIR = new io.salus.core.crypto.KeyDirectory(SignatureScheme.WEAK_CRC32C);

    static {
        KEYS.forEach(DIR::register);
    }

    /** The reader's check: a CHECKPOINT signed by the three replicas (every generation has the same ones here). */
    static final java.util.function.Predicate<Certificate> VALID = c -> c.type() == CertType.CHECKPOINT
            && c.verify(DIR, KEYS.stream().map(NodeKeys::id).collect(java.util.stream.Collectors.toSet()));

    /** A fresh, empty store. */
    abstract Coordination newStore() throws Exception;

    /** Another handle on the same store as {@code c}. */
    abstract Coordination peer(Coordination c) throws Exception;

    static Certificate checkpoint(RegionId r, long generation, long index) {
        Hash root = HashAlgorithm.SHA256.hash(new byte[] {(byte) generation, (byte) index});
        Statement.Checkpoint st = new Statement.Checkpoint(r, generation, index, index * 2, root, root);
        List<Certificate> t = new ArrayList<>();
        for (NodeKeys k : KEYS) {
            t.add(Certificate.sign(CertType.TENTATIVE_CHECKPOINT, st, k.signer()));
        }
        return Certificate.combine(t);
    }

    static long indexOf(Optional<Certificate> c) {
        return c.orElseThrow().statement(Statement.Checkpoint.class).throughIndex();
    }

    static Lcp lcp(long epoch, long seq) {
        return new Lcp(epoch, seq, HashAlgorithm.SHA256.hash(new byte[] {(byte) seq}));
    }

    static RegionReport report(long committed, Long... prepared) {
        return new RegionReport(committed, new TreeSet<>(List.of(prepared)));
    }

    @Test
    void noCheckpointUntilOneIsStored() throws Exception {
        Coordination c = newStore();
        assertEquals(Optional.empty(), c.latestCheckpoint(R0, VALID));
        Certificate cp = checkpoint(R0, 1, 5);
        c.putCheckpoint(cp);
        assertEquals(Optional.of(cp), c.latestCheckpoint(R0, VALID));
        assertEquals(Optional.empty(), c.latestCheckpoint(R1, VALID), "regions are independent");
        assertEquals(Optional.empty(), c.latestCheckpoint(new RegionId("vol2", 0), VALID), "volumes are independent");
    }

    @Test
    void aCheckpointIsReplacedOnlyByANewerOne() throws Exception {
        Coordination c = newStore();
        c.putCheckpoint(checkpoint(R0, 1, 5));
        c.putCheckpoint(checkpoint(R0, 1, 3)); // stale index
        assertEquals(5, indexOf(c.latestCheckpoint(R0, VALID)));
        c.putCheckpoint(checkpoint(R0, 1, 9));
        assertEquals(9, indexOf(c.latestCheckpoint(R0, VALID)));
        c.putCheckpoint(checkpoint(R0, 2, 1)); // newer generation beats a higher index
        assertEquals(1, indexOf(c.latestCheckpoint(R0, VALID)));
        c.putCheckpoint(checkpoint(R0, 1, 100)); // stale generation
        assertEquals(2, c.latestCheckpoint(R0, VALID).orElseThrow().statement(Statement.Checkpoint.class).generation());
        Certificate first = c.latestCheckpoint(R0, VALID).orElseThrow();
        Statement.Checkpoint st = first.statement(Statement.Checkpoint.class);
        Certificate sameIndexOtherRoot = Certificate.combine(KEYS.stream().map(k -> Certificate.sign(
                CertType.TENTATIVE_CHECKPOINT, new Statement.Checkpoint(R0, st.generation(), st.throughIndex(),
                        st.lastSeq(), HashAlgorithm.SHA256.hash(new byte[] {42}), st.volumeRoot()), k.signer())).toList());
        c.putCheckpoint(sameIndexOtherRoot);
        Certificate smaller = java.util.Arrays.compareUnsigned(Coordination.digest(first),
                Coordination.digest(sameIndexOtherRoot)) < 0 ? first : sameIndexOtherRoot;
        assertEquals(smaller, c.latestCheckpoint(R0, VALID).orElseThrow(),
                "an equal (generation, index): the smallest digest, in every implementation");
        c.putCheckpoint(first); // filed again: one copy, nothing changes
        assertEquals(smaller, c.latestCheckpoint(R0, VALID).orElseThrow());
    }

    /**
     * Hostile (review finding): one faulty replica holding the store's credentials files a checkpoint
     * with a huge index, its own signature and two made-up ones, then one at the honest replicas' next
     * index. Neither hides the honest checkpoints, the honest ones filed afterwards are still read,
     * and nothing a writer files rolls the region back to an older checkpoint.
     */
    @Test
    void aForgedCheckpointNeitherHidesNorRollsBackTheVerifiedOnes() throws Exception {
        Coordination c = newStore();
        c.putCheckpoint(checkpoint(R0, 1, 5));
        Certificate huge = forged(R0, 1, 1_000_003);
        Certificate squat = forged(R0, 1, 9);
        org.junit.jupiter.api.Assertions.assertFalse(VALID.test(huge) || VALID.test(squat));
        c.putCheckpoint(huge);
        c.putCheckpoint(squat);
        assertEquals(5, indexOf(c.latestCheckpoint(R0, VALID)), "the forged ones are skipped");
        c.putCheckpoint(checkpoint(R0, 1, 9)); // the honest replicas' next checkpoint, same index as the squat
        assertEquals(9, indexOf(c.latestCheckpoint(R0, VALID)));
        c.putCheckpoint(checkpoint(R0, 1, 5)); // a replay of an older one
        assertEquals(9, indexOf(c.latestCheckpoint(R0, VALID)), "no rollback");
        assertEquals(1_000_003, indexOf(c.latestCheckpoint(R0, x -> true)),
                "the store keeps what it was given; only the reader's check tells them apart");
    }

    /**
     * Issue 11: filed checkpoints used to be kept for ever (one znode per checkpoint of the region's
     * life). Pruning removes those strictly older than the latest VALID one; a forged newer one (the
     * reader's check refuses it) neither makes the valid one disappear nor is taken for it.
     */
    @Test
    void pruningRemovesOnlyWhatIsOlderThanTheLatestValidCheckpoint() throws Exception {
        Coordination c = newStore();
        for (long i = 3; i <= 11; i += 4) {
            c.putCheckpoint(checkpoint(R0, 1, i));
        }
        c.putCheckpoint(forged(R0, 1, 1_000_003)); // newer, forged
        c.putCheckpoint(forged(R0, 1, 2)); // older, forged
        c.putCheckpoint(checkpoint(R1, 1, 3)); // another region
        assertEquals(3, c.pruneCheckpoints(R0, VALID), "(1,3), (1,7) and the older forged one");
        assertEquals(11, indexOf(c.latestCheckpoint(R0, VALID)), "the latest valid one stays");
        assertEquals(1_000_003, indexOf(c.latestCheckpoint(R0, x -> true)), "newer candidates are not judged");
        assertEquals(Optional.empty(), c.latestCheckpoint(R0, x -> VALID.test(x) && indexOf(Optional.of(x)) < 11),
                "nothing older than the latest valid one is left");
        assertEquals(3, indexOf(c.latestCheckpoint(R1, VALID)), "other regions are untouched");
        assertEquals(0, c.pruneCheckpoints(R0, VALID), "pruning again removes nothing");
        c.putCheckpoint(checkpoint(R0, 1, 7)); // a replay of an older one is pruned again
        assertEquals(1, c.pruneCheckpoints(R0, VALID));
        c.putCheckpoint(checkpoint(R0, 2, -1)); // recovery's first checkpoint of generation 2
        assertEquals(2, c.pruneCheckpoints(R0, VALID),
                "a newer generation's first checkpoint replaces (1,11), and the forged (1,1000003) is older than it");
        assertEquals(-1, indexOf(c.latestCheckpoint(R0, VALID)));

        Coordination onlyForged = newStore();
        onlyForged.putCheckpoint(forged(R0, 1, 5));
        assertEquals(0, onlyForged.pruneCheckpoints(R0, VALID), "no valid checkpoint: nothing is removed");
        assertEquals(5, indexOf(onlyForged.latestCheckpoint(R0, x -> true)));
    }

    /** A generation's first checkpoint (index -1, filed by recovery) is read back like any other. */
    @Test
    void aGenerationsFirstCheckpointAtIndexMinusOneIsRead() throws Exception {
        Coordination c = newStore();
        c.putCheckpoint(checkpoint(R0, 1, 7));
        Certificate first = checkpoint(R0, 2, -1);
        c.putCheckpoint(first);
        assertEquals(Optional.of(first), c.latestCheckpoint(R0, VALID));
    }

    /** A CHECKPOINT with rs0's genuine signature and two made-up ones. */
    static Certificate forged(RegionId r, long generation, long index) {
        Statement.Checkpoint st = new Statement.Checkpoint(r, generation, index, index * 2,
                HashAlgorithm.SHA256.hash(new byte[] {7}), HashAlgorithm.SHA256.hash(new byte[] {8}));
        Certificate mine = Certificate.sign(CertType.TENTATIVE_CHECKPOINT, st, KEYS.get(0).signer());
        List<Certificate.Sig> sigs = new ArrayList<>(mine.signatures());
        sigs.add(new Certificate.Sig(KEYS.get(1).id(), new byte[4]));
        sigs.add(new Certificate.Sig(KEYS.get(2).id(), new byte[4]));
        sigs.sort(java.util.Comparator.comparing(x -> x.signer().toString()));
        return Certificate.of(CertType.CHECKPOINT, mine.scheme(), st, sigs);
    }

    @Test
    void onlyCheckpointCertificatesAreAccepted() throws Exception {
        Coordination c = newStore();
        Certificate notACheckpoint = Certificate.sign(CertType.NO_NEXT_ENTRY,
                new Statement.NoNextEntry(R0, 1, 4), KEYS.get(0).signer());
        assertThrows(IllegalArgumentException.class, () -> c.putCheckpoint(notACheckpoint));
        assertEquals(Optional.empty(), c.latestCheckpoint(R0, VALID));
    }

    @Test
    void reportsAreKeptPerEpochAndRegionAndReplaced() throws Exception {
        Coordination c = newStore();
        assertEquals(Map.of(), c.reports(7));
        c.report(7, 1, report(3, 5L, 7L));
        c.report(7, 0, report(2));
        c.report(8, 0, report(9, 10L));
        Map<Integer, RegionReport> r = c.reports(7);
        assertEquals(List.of(0, 1), new ArrayList<>(r.keySet()), "ordered by region");
        assertEquals(report(3, 5L, 7L), r.get(1));
        assertEquals(report(2), r.get(0));
        c.report(7, 1, report(4, 6L));
        assertEquals(report(4, 6L), c.reports(7).get(1), "a second report of a region replaces the first");
        assertEquals(Map.of(0, report(9, 10L)), c.reports(8));
        c.reports(7).clear();
        assertEquals(2, c.reports(7).size(), "reports() returns a copy");
    }

    @Test
    void theFirstLcpOfAnEpochWins() throws Exception {
        Coordination c = newStore();
        assertEquals(Optional.empty(), c.lcp(3));
        assertEquals(lcp(3, 10), c.putLcp(lcp(3, 10)));
        assertEquals(lcp(3, 10), c.putLcp(lcp(3, 12)), "the stored value is returned, not the loser's");
        assertEquals(Optional.of(lcp(3, 10)), c.lcp(3));
        assertEquals(lcp(4, 12), c.putLcp(lcp(4, 12)));
        assertEquals(Optional.of(lcp(3, 10)), c.lcp(3));
    }

    /**
     * Review rvw23-3: an LCP keeps the client's signature through the store, which verifies only for that client,
     * volume and value; an unsigned one stays unsigned.
     */
    @Test
    void anLcpKeepsItsClientSignature() throws Exception {
        Coordination c = newStore();
        NodeKeys client = NodeKeys.deterministic(SignatureScheme.ED25519, NodeId.of("client"), 7);
        NodeKeys other = NodeKeys.deterministic(SignatureScheme.ED25519, NodeId.of("rs0"), 8);
        io.salus.core.crypto.KeyDirectory keys = new io.salus.core.crypto.KeyDirectory(SignatureScheme.ED25519)
                .register(client).register(other);
        Lcp signed = lcp(5, 10).signed("v", client.signer());
        assertEquals(signed, c.putLcp(signed));
        Lcp read = c.lcp(5).orElseThrow();
        assertEquals(signed, read);
        assertTrue(read.signedBy(keys, client.id(), "v"));
        assertTrue(!read.signedBy(keys, client.id(), "w"), "another volume's");
        assertTrue(!read.signedBy(keys, other.id(), "v"), "another signer's");
        assertTrue(!new Lcp(5, 11, read.root(), read.clientSig()).signedBy(keys, client.id(), "v"), "another seq");
        c.putLcp(lcp(6, 10));
        assertTrue(!c.lcp(6).orElseThrow().signedBy(keys, client.id(), "v"), "unsigned");
        c.putLcp(lcp(7, 10).signed("v", other.signer()));
        assertTrue(!c.lcp(7).orElseThrow().signedBy(keys, client.id(), "v"), "signed by a region server");
    }

    @Test
    void aSecondHandleSeesTheFirstOnesWrites() throws Exception {
        Coordination a = newStore();
        Coordination b = peer(a);
        a.putCheckpoint(checkpoint(R0, 1, 5));
        a.report(1, 0, report(2, 3L));
        a.putLcp(lcp(1, 2));
        assertEquals(5, indexOf(b.latestCheckpoint(R0, VALID)));
        assertEquals(Map.of(0, report(2, 3L)), b.reports(1));
        assertEquals(Optional.of(lcp(1, 2)), b.lcp(1));
    }

    /** Hostile: writers on separate handles race for one epoch's LCP; all must see the same winner. */
    @Test
    void racingLcpWritersAllGetTheSameWinner() throws Exception {
        Coordination first = newStore();
        int writers = 6;
        List<Lcp> returned = race(first, writers, (c, i) -> c.putLcp(lcp(9, 100 + i)));
        Lcp stored = first.lcp(9).orElseThrow();
        assertEquals(Set.of(stored), new HashSet<>(returned), "every writer got the stored LCP back");
        assertTrue(stored.seq() >= 100 && stored.seq() < 100 + writers);
    }

    /** Hostile: writers race checkpoints of one region; the newest must survive whatever the order. */
    @Test
    void racingCheckpointWritersLeaveTheNewest() throws Exception {
        Coordination first = newStore();
        int writers = 6;
        race(first, writers, (c, i) -> {
            for (int k = 0; k < 5; k++) {
                c.putCheckpoint(checkpoint(R0, 1, i * 5 + k));
            }
            return null;
        });
        assertEquals((writers - 1) * 5 + 4, indexOf(first.latestCheckpoint(R0, VALID)));
    }

    interface Writer<T> {
        T write(Coordination c, int i) throws Exception;
    }

    /** Runs {@code n} writers, each on its own handle, released together by a barrier. */
    <T> List<T> race(Coordination first, int n, Writer<T> w) throws Exception {
        List<Coordination> handles = new ArrayList<>();
        handles.add(first);
        for (int i = 1; i < n; i++) {
            handles.add(peer(first));
        }
        CyclicBarrier start = new CyclicBarrier(n);
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            List<Future<T>> fs = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                int id = i;
                Callable<T> task = () -> {
                    start.await();
                    return w.write(handles.get(id), id);
                };
                fs.add(pool.submit(task));
            }
            List<T> out = new ArrayList<>();
            for (Future<T> f : fs) {
                out.add(f.get(2, TimeUnit.MINUTES)); // a hang guard only: failure, not a timing assertion
            }
            return out;
        } finally {
            pool.shutdownNow();
        }
    }
}
