package io.salus.core.protocol.recovery;

import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import io.salus.core.cert.Statement;
import io.salus.core.crypto.Verifier;
import io.salus.core.merkle.Hash;
import io.salus.core.protocol.Membership;
import io.salus.core.protocol.RrsConfig;
import java.util.Map;
import java.util.Optional;
import java.util.function.Predicate;

/**
 * The trusted coordination service of §3.3.4 (ZooKeeper for LCP coordination, NameNode xattrs for
 * checkpoint certificates). {@link InMemoryCoordination} now; the ZooKeeper/NameNode implementation
 * comes with the HBase integration.
 */
public interface Coordination {
    /** What one RRS reports for identifyLCP: its checkpointed (committed) seq and prepared seqs. */
    record RegionReport(long committedSeq, java.util.SortedSet<Long> preparedSeqs) {
    }

    /**
     * The agreed longest committable prefix: last seq and the volume root after it, and the signature of the mounting
     * client that recorded it ({@code clientSig}, null: unsigned, e.g. the simulator's master-side recovery). The
     * store checks nothing, and the LCP's path is predictable (a mount's fence is the next multiple of the batch-id
     * epoch): whoever holds the store's credentials, a faulty region server included, could file one there before the
     * next open and make a clean volume unmountable for good (review rvw23-3). So a mount and the leader replicas
     * count only an LCP the volume's client signed ({@link #signedBy}); a mount whose fence holds another one moves
     * to the next epoch.
     */
    record Lcp(long epoch, long seq, Hash root, byte[] clientSig) {
        private static final byte[] DOMAIN = "salus-lcp-v1\0".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

        public Lcp(long epoch, long seq, Hash root) {
            this(epoch, seq, root, null);
        }

        /** The bytes the client signs: the LCP of {@code volume}, domain-separated from every other signature. */
        public static byte[] signedBytes(String volume, long epoch, long seq, Hash root) {
            return new io.salus.core.cert.Wire.Out().bytes(DOMAIN).str8(volume).i64(epoch).i64(seq).hash(root)
                    .toByteArray();
        }

        /** This LCP signed by the client of {@code volume}. */
        public Lcp signed(String volume, io.salus.core.crypto.Signer client) {
            return new Lcp(epoch, seq, root, client.sign(signedBytes(volume, epoch, seq, root)));
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Lcp l && l.epoch == epoch && l.seq == seq && l.root.equals(root)
                    && java.util.Arrays.equals(l.clientSig, clientSig);
        }

        @Override
        public int hashCode() {
            return java.util.Objects.hash(epoch, seq, root, java.util.Arrays.hashCode(clientSig));
        }

        /** True if {@code client}, the client of {@code volume}, signed exactly this LCP. */
        public boolean signedBy(io.salus.core.crypto.Verifier verifier, io.salus.core.crypto.NodeId client,
                                String volume) {
            return clientSig != null && verifier.verify(client, signedBytes(volume, epoch, seq, root), clientSig);
        }
    }

    /**
     * Files a CHECKPOINT certificate as one more candidate of its region. The store does not check
     * signatures (whoever holds the store's credentials can file anything, a faulty replica included),
     * so it never replaces or removes a filed certificate: a forged one with a huge index cannot hide
     * the honest ones, and nobody can roll the region back to an older checkpoint. Filing the same
     * certificate twice keeps one copy.
     *
     * @throws IllegalArgumentException if {@code checkpoint} does not carry a checkpoint statement
     */
    void putCheckpoint(Certificate checkpoint);

    /**
     * The newest (generation, then index) filed checkpoint of {@code region} that {@code valid}
     * accepts, or empty. Candidates that {@code valid} refuses (forged, wrong signers) are skipped.
     * Among several accepted ones of one (generation, index), the one whose encoding has the smallest
     * SHA-256 (the same answer from every implementation).
     *
     * @param valid the reader's check, normally {@link #signedByItsGeneration}
     */
    Optional<Certificate> latestCheckpoint(RegionId region, Predicate<Certificate> valid);

    /**
     * Removes the filed checkpoints of {@code region} strictly older (generation, then index) than the
     * newest one {@code valid} accepts, and returns how many it removed. Candidates newer than that one
     * (forged, or not verifiable by this caller) and those of the same (generation, index) are kept, so
     * a forged newer certificate can never make the valid one disappear; with no valid one nothing is
     * removed. Called by a replica after it files a CHECKPOINT certificate it formed, so the store
     * holds what the latest checkpoint needs, not every checkpoint of the region's life.
     * Implementations that keep no history may leave the default (removes nothing).
     *
     * @param valid the caller's check, normally {@link #signedByItsGeneration}
     */
    default int pruneCheckpoints(RegionId region, Predicate<Certificate> valid) {
        return 0;
    }

    /** True if checkpoint {@code a} is strictly older (generation, then index) than {@code b}. */
    static boolean olderThan(Statement.Checkpoint a, Statement.Checkpoint b) {
        return a.generation() < b.generation()
                || a.generation() == b.generation() && a.throughIndex() < b.throughIndex();
    }

    /**
     * The check a reader applies to a filed checkpoint: a CHECKPOINT certificate whose region and
     * generation are known to {@code membership} and that carries the signatures of all three
     * replicas of that generation.
     */
    static Predicate<Certificate> signedByItsGeneration(Verifier verifier, Membership membership) {
        return c -> {
            if (c.type() != CertType.CHECKPOINT) {
                return false;
            }
            Statement.Checkpoint st = c.statement(Statement.Checkpoint.class);
            RrsConfig rc = membership.config(st.region(), st.generation());
            return rc != null && c.verify(verifier, rc.replicaSet());
        };
    }

    /** SHA-256 of the certificate's canonical encoding: the identity of a filed checkpoint. */
    static byte[] digest(Certificate c) {
        try {
            return java.security.MessageDigest.getInstance("SHA-256").digest(c.encode());
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK has no SHA-256", e);
        }
    }

    /** Orders filed checkpoints newest first: generation, then index, then SHA-256 of the encoding. */
    static int newestFirst(Statement.Checkpoint a, byte[] aDigest, Statement.Checkpoint b, byte[] bDigest) {
        int c = Long.compare(b.generation(), a.generation());
        if (c == 0) {
            c = Long.compare(b.throughIndex(), a.throughIndex());
        }
        return c != 0 ? c : java.util.Arrays.compareUnsigned(aDigest, bDigest);
    }

    /** An RRS writes its report for recovery {@code epoch}. */
    void report(long epoch, int region, RegionReport report);

    /** All reports of {@code epoch} (the "file is complete" once every region has one). */
    Map<Integer, RegionReport> reports(long epoch);

    /** Records the LCP of {@code lcp.epoch()} (first writer wins). Returns the stored value. */
    Lcp putLcp(Lcp lcp);

    Optional<Lcp> lcp(long epoch);
}
