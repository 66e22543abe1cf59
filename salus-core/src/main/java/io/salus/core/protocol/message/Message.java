package io.salus.core.protocol.message;

import io.salus.core.cert.Certificate;
import io.salus.core.crypto.NodeId;
import io.salus.core.merkle.MerkleProof;

/**
 * The messages of pipelined commit (§3.3.1) and active storage (§3.3.2). The sender is known from
 * the transport envelope; anything whose integrity matters is covered by a signature or a
 * certificate, so a corrupted message is detected by its receiver.
 */
public sealed interface Message {

    /** Client → primary, and replica → next replica in the chain: one region's sub-batch. */
    record SubBatchMsg(SubBatch subBatch) implements Message {
    }

    /** Client → the three replicas of the batch leader's region. */
    record BatchInfoMsg(BatchInfo info) implements Message {
    }

    /**
     * Replica → its chain predecessor (task net19): the log entry at {@code index} of (region, generation) with this
     * digest (the hash of the sub-batch's canonical encoding) is durable in the sender's log, so the predecessor
     * stops resending the sub-batch's payload to it ({@code RegionReplica#tick}). Unsigned: the transport between
     * region servers authenticates the sender, and the receiver takes it only from its chain successor and only for
     * an entry of its own log with the same digest. A successor that lies only withholds its own copy (liveness:
     * the predecessor's rare resend and the client's recovery bound it), never what the others stored.
     */
    record ChainAck(int region, long generation, long index, io.salus.core.merkle.Hash digest) implements Message {
    }

    /** Replica → the 5 metadata holders: a TENTATIVE_LOG_ENTRY certificate. */
    record LogCertMsg(Certificate tentative) implements Message {
    }

    /**
     * Metadata holder → replica: the LOG_ENTRY for (region, generation, index) with this digest is
     * durably stored; signed by the holder over {@link #signedBytes}.
     */
    record StoreAck(int region, long generation, long index, io.salus.core.merkle.Hash digest, byte[] signature)
            implements Message {
        public static byte[] signedBytes(int region, long generation, long index, io.salus.core.merkle.Hash digest) {
            return new io.salus.core.cert.Wire.Out().u8(0x41).i32(region).i64(generation).i64(index).hash(digest)
                    .toByteArray();
        }
    }

    /** Participant replica → each replica of the batch leader region: YES/NO for its sub-batch, signed. */
    record Vote(long batchId, int region, long generation, boolean yes, byte[] signature) implements Message {
    }

    /**
     * Leader replica of batch b+1 (or a recovering participant) → leader replicas of batch b, which
     * lead in region {@code leaderRegion} (a server may host replicas of several regions).
     */
    record DecisionRequest(int leaderRegion, long batchId) implements Message {
    }

    /** Leader replica → participants / next leader: TENTATIVE_COMMIT or TENTATIVE_ABORT. */
    record DecisionMsg(Certificate tentative) implements Message {
    }

    /** Replica → client: TENTATIVE_PUT_SUCCESS or TENTATIVE_PUT_FAILED. */
    record PutReply(Certificate tentative) implements Message {
    }

    /** Client → one replica: read a block once the region committed the PUT {@code prevNum}. */
    record GetRequest(long requestId, long block, long prevNum) implements Message {
    }

    /**
     * Replica → client: the block's data, the last applied seq of the region, and the proof from the
     * leaf to the region tree root (local block index inside the region).
     */
    record GetReply(long requestId, long block, byte[] data, long appliedSeq, MerkleProof proof) implements Message {
    }

    /** Primary → replicas: flush/compaction proposal "checkpoint through log index k". */
    record CheckpointPropose(int region, long generation, long throughIndex) implements Message {
    }

    /** Replica → replicas: TENTATIVE_CHECKPOINT over (region, k, root). */
    record CheckpointVote(Certificate tentative) implements Message {
    }

    /**
     * Replica → its RRS's metadata holders: the CHECKPOINT certificate through index k that just formed. A holder
     * that verifies it (three signatures of the replicas of the generation it names) drops its LOG_ENTRY
     * certificates of that log at or below k ({@code WitnessLog#truncate}); any other certificate drops nothing.
     */
    record CheckpointCert(Certificate checkpoint) implements Message {
    }

    /**
     * Client → every replica of every region, first thing after it takes the writer lease: its WRITER_EPOCH
     * certificate (signed by the client). A replica records it durably, then refuses sub-batches and BatchInfos of
     * any other epoch, so a writer whose lease was taken over cannot get a write accepted even before the new
     * writer writes anything.
     */
    record WriterFence(Certificate writerEpoch) implements Message {
    }

    /**
     * Replica → client, signed by the replica over {@link #signedBytes}: the replica's writer epoch
     * {@code replicaEpoch} in answer to the client's {@code clientEpoch}. {@code batchId < 0} answers a
     * {@link WriterFence} (equal epochs: this replica is fenced for the client); {@code batchId >= 0} refuses that
     * batch's sub-batch or BatchInfo because the epochs differ (higher: the client was fenced by a newer writer and
     * nothing of the batch is applied here; lower: the replica has not been fenced for this client yet).
     */
    record WriterEpochReply(String volume, int region, long batchId, long clientEpoch, long replicaEpoch,
                            byte[] signature) implements Message {
        public static byte[] signedBytes(String volume, int region, long batchId, long clientEpoch, long replicaEpoch) {
            return new io.salus.core.cert.Wire.Out().u8(0x45).str8(volume).i32(region).i64(batchId).i64(clientEpoch)
                    .i64(replicaEpoch).toByteArray();
        }
    }

    /**
     * Client → every replica of every region written since its previous FLUSH (task tput18): an NBD FLUSH, or a FUA
     * write, needs every write acknowledged before it to be durable against a machine crash. Replicas make log
     * entries and commit marks durable against a crash of the writing process only (HDFS hflush: in the DataNode,
     * not yet on its disk); on this request a replica makes everything it wrote so far durable (hsync) and then
     * answers {@link FlushReply}. The client answers the FLUSH only once all three replicas of each such region
     * answered (unanimous). Bare: anyone may ask a replica to sync (it costs the asker a call; the endpoint
     * authenticates calls), only the client is answered.
     */
    record FlushRequest(long flushId) implements Message {
    }

    /**
     * Replica → client, signed by the replica over {@link #signedBytes}: everything this replica of {@code region}
     * (generation {@code generation}) had logged and recorded when {@code flushId} arrived is durable (hsync).
     */
    record FlushReply(String volume, int region, long generation, long flushId, byte[] signature) implements Message {
        public static byte[] signedBytes(String volume, int region, long generation, long flushId) {
            return new io.salus.core.cert.Wire.Out().u8(0x48).str8(volume).i32(region).i64(generation).i64(flushId)
                    .toByteArray();
        }
    }

    /**
     * A new writer → every replica of every region, at mount (§3.3.3): report your region's state, bound to
     * {@code nonce} (fresh per mount, so an answer to an earlier mount cannot be replayed). With {@code fenceBelow}
     * > 0 the query is signed by the client over {@link #signedBytes} and fences the previous writer: from then on
     * the replica logs no sub-batch from the client with a batch id below it (already logged entries are still
     * forwarded and decided), so the regions' states can only settle, not grow, while the mount reads them.
     */
    record MountQuery(long nonce, long fenceBelow, byte[] signature) implements Message {
        public static byte[] signedBytes(String volume, long nonce, long fenceBelow) {
            return new io.salus.core.cert.Wire.Out().u8(0x46).str8(volume).i64(nonce).i64(fenceBelow).toByteArray();
        }
    }

    /**
     * Replica → client: its region's state at mount, signed by the replica over {@link #signedBytes()}.
     * {@code fenceBelow} is the highest fence a mount query set at this replica; {@code lastBatchId} is the highest
     * batch id the replica knows for the volume (logged or decided), {@code lastAcceptedSeq} the last seq it accepted
     * into its log (the prevNum of the next PUT to the region), {@code loggedIndex}/{@code committedIndex} its last
     * logged and last resolved log index; {@code appliedSeq}, {@code regionRoot} and the root record
     * ({@code recordRoot}, {@code recordSeq}) its applied state. A fixed size whatever the region holds: the leaf
     * hashes the client rebuilds the region tree from come apart, in ranges ({@link LeafQuery}, {@link LeafChunk}),
     * once the region's three replicas agree (issue 27: every answer used to carry them, and at 2 GiB written every
     * retransmitted query made 96 replicas scan and send their whole regions).
     */
    record MountState(long nonce, String volume, int region, long generation, long fenceBelow, long lastBatchId,
                      long lastAcceptedSeq,
                      long loggedIndex, long committedIndex, long appliedSeq, io.salus.core.merkle.Hash regionRoot,
                      io.salus.core.merkle.Hash recordRoot, long recordSeq, byte[] signature)
            implements Message {

        /** The bytes the replica signs: every field but the signature. */
        public byte[] signedBytes() {
            return signedBytes(lastBatchId);
        }

        private byte[] signedBytes(long batchId) {
            return new io.salus.core.cert.Wire.Out().u8(0x4d).i64(nonce).str8(volume).i32(region).i64(generation)
                    .i64(fenceBelow).i64(batchId).i64(lastAcceptedSeq).i64(loggedIndex).i64(committedIndex).i64(appliedSeq)
                    .hash(regionRoot).hash(recordRoot).i64(recordSeq).toByteArray();
        }

        public MountState withSignature(byte[] sig) {
            return new MountState(nonce, volume, region, generation, fenceBelow, lastBatchId, lastAcceptedSeq, loggedIndex,
                    committedIndex, appliedSeq, regionRoot, recordRoot, recordSeq, sig);
        }

        /** The same answer with another region root, unsigned (fault injection in tests: a replica that lies). */
        public MountState withRegionRoot(io.salus.core.merkle.Hash root) {
            return new MountState(nonce, volume, region, generation, fenceBelow, lastBatchId, lastAcceptedSeq,
                    loggedIndex, committedIndex, appliedSeq, root, recordRoot, recordSeq, null);
        }

        /**
         * True if {@code o} reports the same signed state (the signature aside), its batch id aside too:
         * {@code lastBatchId} is what this replica happens to know (a replica caught up from a peer at a checkpoint
         * knows none of the batches below it), it only raises the new writer's fence (the mount takes the highest any
         * replica reports), and it is no part of the region's state.
         */
        public boolean sameState(MountState o) {
            return java.util.Arrays.equals(signedBytes(0), o.signedBytes(0));
        }

        /** Nothing logged here is still undecided. */
        public boolean settled() {
            return committedIndex == loggedIndex;
        }

        @Override
        public String toString() {
            return "MountState[region " + region + " gen " + generation + ", fence " + fenceBelow + ", last batch " + lastBatchId
                    + ", accepted seq " + lastAcceptedSeq + ", logged " + loggedIndex + ", committed " + committedIndex
                    + ", applied seq " + appliedSeq + ", region root " + regionRoot + ", record (" + recordRoot + ", "
                    + recordSeq + ")]";
        }
    }

    /**
     * Client → replica, during a mount: the leaf hashes of the region's written blocks in the local block range
     * [{@code fromBlock}, {@code toBlock}), answered with a {@link LeafChunk}. Asked once the region's three replicas
     * signed the same settled state; the client rebuilds the region tree from the chunks and compares its root with
     * the signed one, so nothing here needs a signature. Only the volume's client is answered.
     */
    record LeafQuery(long nonce, int region, long fromBlock, long toBlock) implements Message {
        /** The widest range a replica answers (an answer of at most ~640 KiB). */
        public static final long MAX_BLOCKS = 16_384;
    }

    /**
     * Replica → client, in answer to a {@link LeafQuery}: the leaf hash of every written block of the region in
     * [{@code fromBlock}, {@code toBlock}) (local block numbers), with the region root the replica holds as it answers,
     * signed by the replica over {@link #signedBytes()} (review of issue 27's leaf fetch: a reply's sender is the
     * transport's word, and one faulty server answering unsigned chunks in the names of its region's other replicas got
     * the mount refused). The client trusts the leaves only once all of a region's chunks rebuild the root its three
     * replicas signed in their {@link MountState}s; a signed chunk that does not is proof its replica lies.
     */
    record LeafChunk(long nonce, String volume, int region, long generation, io.salus.core.merkle.Hash regionRoot,
                     long fromBlock, long toBlock, java.util.SortedMap<Long, io.salus.core.merkle.Hash> leaves,
                     byte[] signature)
            implements Message {
        public LeafChunk {
            leaves = java.util.Collections.unmodifiableSortedMap(leaves);
        }

        /** The bytes the replica signs: every field, every leaf, but the signature. */
        public byte[] signedBytes() {
            io.salus.core.cert.Wire.Out o = new io.salus.core.cert.Wire.Out().u8(0x4c).i64(nonce).str8(volume)
                    .i32(region).i64(generation).hash(regionRoot).i64(fromBlock).i64(toBlock).i32(leaves.size());
            leaves.forEach((k, h) -> o.i64(k).hash(h));
            return o.toByteArray();
        }

        public LeafChunk withSignature(byte[] sig) {
            return new LeafChunk(nonce, volume, region, generation, regionRoot, fromBlock, toBlock, leaves, sig);
        }

        @Override
        public String toString() {
            return "LeafChunk[region " + region + " gen " + generation + ", blocks " + fromBlock + ".." + toBlock
                    + ", " + leaves.size() + " leaves, region root " + regionRoot + "]";
        }
    }

    /**
     * A replica that runs recovery at region open (issue 14) and finds its own state does not reach the latest
     * CHECKPOINT certificate (its log or checkpoint files lost or behind) → a peer replica of its RRS: send the
     * region state through the certified checkpoint {@code throughIndex} of {@code generation} and the log entries
     * after it ({@link StateTransfer}). Only the RRS's own replicas are answered.
     */
    record StateRequest(int region, long generation, long throughIndex) implements Message {
    }

    /** One block of a transferred region state (local index, contents). */
    record StateBlock(long localBlock, byte[] data) {
    }

    /**
     * Peer → recovering replica: its region state through checkpoint {@code throughIndex} (every written block, the
     * last applied seq and the volume-root record), its log entries from {@code throughIndex + 1} on (contiguous, as
     * logged), and the decisions it recorded (COMMIT/ABORT certificates, the writer's WRITER_EPOCH fences).
     * Unsigned: nothing in it is taken on the peer's word. The receiver checks the state against the CHECKPOINT
     * certificate (region tree root, seq, root record), every entry's client signature and prevNum chain, every
     * decision's three leader signatures and every fence's client signature.
     */
    record StateTransfer(int region, long generation, long throughIndex, long lastSeq,
                         io.salus.core.merkle.Hash recordRoot, long recordSeq, java.util.List<StateBlock> blocks,
                         java.util.List<byte[]> entries, java.util.List<io.salus.core.cert.Certificate> decisions,
                         java.util.SortedMap<Long, io.salus.core.merkle.Hash> leaves)
            implements Message {
        public StateTransfer {
            blocks = java.util.List.copyOf(blocks);
            entries = java.util.List.copyOf(entries);
            decisions = java.util.List.copyOf(decisions);
            leaves = java.util.Collections.unmodifiableSortedMap(new java.util.TreeMap<>(leaves));
        }

        /** A whole transfer: the state's blocks themselves, no leaf hashes. */
        public StateTransfer(int region, long generation, long throughIndex, long lastSeq,
                             io.salus.core.merkle.Hash recordRoot, long recordSeq, java.util.List<StateBlock> blocks,
                             java.util.List<byte[]> entries, java.util.List<io.salus.core.cert.Certificate> decisions) {
            this(region, generation, throughIndex, lastSeq, recordRoot, recordSeq, blocks, entries, decisions,
                    new java.util.TreeMap<>());
        }

        /**
         * A metadata transfer (the first phase of a rebuild while serving, {@link RebuildRequest}): no block, the leaf
         * hash of every block the state holds instead; the receiver checks them against the certified region root.
         */
        public boolean metadataOnly() {
            return !leaves.isEmpty();
        }

        @Override
        public String toString() {
            return "StateTransfer[region " + region + " gen " + generation + " through " + throughIndex + ", seq "
                    + lastSeq + ", " + blocks.size() + " blocks, " + leaves.size() + " leaf hashes, " + entries.size()
                    + " entries, " + decisions.size() + " decisions]";
        }
    }

    /**
     * A replica rebuilt while serving (issue 14 item 3) → a peer replica of its RRS. With no block: the metadata of
     * the state through the certified checkpoint {@code throughIndex} (answered with a {@link StateTransfer} holding
     * the leaf hashes instead of the blocks, and the log entries and decisions after it). With blocks: those blocks
     * of that state (answered with {@link RebuildBlocks}), asked a few at a time at the rebuild's throttled rate.
     * Only the RRS's own replicas are answered.
     */
    record RebuildRequest(int region, long generation, long throughIndex, java.util.List<Long> blocks)
            implements Message {
        public RebuildRequest {
            blocks = java.util.List.copyOf(blocks);
        }
    }

    /**
     * Peer → a replica rebuilt while serving: blocks (local index, contents) of its state through the certified
     * checkpoint {@code throughIndex}. Unsigned: each block is taken only if its leaf hash is the certified one.
     */
    record RebuildBlocks(int region, long generation, long throughIndex, java.util.List<StateBlock> blocks)
            implements Message {
        public RebuildBlocks {
            blocks = java.util.List.copyOf(blocks);
        }

        @Override
        public String toString() {
            return "RebuildBlocks[region " + region + " gen " + generation + " through " + throughIndex + ", "
                    + blocks.size() + " blocks]";
        }
    }

    /**
     * One unresolved entry of a replica's log as it reports it at recovery (issue 14 item 4): the batch, its leader
     * region and the seqs of its PUTs in this region.
     */
    record PendingEntry(long batchId, int leaderRegion, java.util.List<Long> seqs) {
        public PendingEntry {
            seqs = java.util.List.copyOf(seqs);
        }
    }

    /**
     * Replica {@code replica} → client, in answer to a <em>fenced</em> {@link MountQuery} (after its {@link MountState}):
     * what recovery (identifyLCP, §3.3.4) needs of this replica, signed by it over {@link #signedBytes}: the fence it
     * holds, its unresolved log entries in log order ({@code pending}), and, as a replica of the batch leader region,
     * the ids of the undecided batches it leads whose client-signed {@link BatchInfo} it holds ({@code batchInfos},
     * with the BatchInfos themselves). Three of these from the replicas of a participant region that do not list a
     * batch prove that the region never logs it (the fence keeps the client's sub-batch out, and a replica logs a
     * sub-batch only from the client or its chain predecessor): the leader replicas may then abort the batch.
     */
    record RecoveryState(long nonce, String volume, int region, long generation, NodeId replica, long fenceBelow,
                         java.util.List<PendingEntry> pending, java.util.List<BatchInfo> batchInfos,
                         java.util.List<Long> committed, java.util.List<CommitProof> commitProofs, byte[] signature)
            implements Message {
        public RecoveryState {
            pending = java.util.List.copyOf(pending);
            batchInfos = java.util.List.copyOf(batchInfos);
            committed = java.util.List.copyOf(committed);
            commitProofs = java.util.List.copyOf(commitProofs);
        }

        /** Compatibility: committed ids without their proofs (a mount counts none of them: review rv19-3). */
        public RecoveryState(long nonce, String volume, int region, long generation, NodeId replica, long fenceBelow,
                             java.util.List<PendingEntry> pending, java.util.List<BatchInfo> batchInfos,
                             java.util.List<Long> committed, byte[] signature) {
            this(nonce, volume, region, generation, replica, fenceBelow, pending, batchInfos, committed,
                    java.util.List.of(), signature);
        }

        /** Compatibility: a replica that signed no COMMIT as a leader (or holds none in memory). */
        public RecoveryState(long nonce, String volume, int region, long generation, NodeId replica, long fenceBelow,
                             java.util.List<PendingEntry> pending, java.util.List<BatchInfo> batchInfos, byte[] signature) {
            this(nonce, volume, region, generation, replica, fenceBelow, pending, batchInfos, java.util.List.of(),
                    signature);
        }

        /**
         * True if this (leader) replica reports it signed COMMIT for {@code batchId} (review rv18r: a decided batch
         * reports no BatchInfo, yet its COMMIT may still be on its way to a participant: it is not a batch that never
         * commits).
         */
        public boolean reportsCommitted(long batchId) {
            return committed.contains(batchId);
        }

        /** The bytes the replica signs: everything but the BatchInfos' own bytes (their ids are covered). */
        public byte[] signedBytes() {
            io.salus.core.cert.Wire.Out o = new io.salus.core.cert.Wire.Out().u8(0x54).i64(nonce).str8(volume)
                    .i32(region).i64(generation).str8(replica.name()).i64(fenceBelow).i32(pending.size());
            for (PendingEntry e : pending) {
                o.i64(e.batchId()).i32(e.leaderRegion()).i32(e.seqs().size());
                e.seqs().forEach(o::i64);
            }
            o.i32(batchInfos.size());
            batchInfos.forEach(b -> o.i64(b.batchId()));
            o.i32(committed.size());
            committed.forEach(o::i64);
            return o.toByteArray();
        }

        public RecoveryState withSignature(byte[] sig) {
            return new RecoveryState(nonce, volume, region, generation, replica, fenceBelow, pending, batchInfos,
                    committed, commitProofs, sig);
        }


        /** True if this replica lists an unresolved entry of {@code batchId}. */
        public boolean lists(long batchId) {
            return pending.stream().anyMatch(e -> e.batchId() == batchId);
        }

        /** The client-signed BatchInfo of {@code batchId} this (leader) replica holds, or null. */
        public BatchInfo batchInfo(long batchId) {
            return batchInfos.stream().filter(b -> b.batchId() == batchId).findFirst().orElse(null);
        }

        @Override
        public String toString() {
            return "RecoveryState[" + replica + " region " + region + " gen " + generation + ", fence " + fenceBelow
                    + ", pending " + pending.stream().map(e -> e.batchId() + "@" + e.leaderRegion() + e.seqs()).toList()
                    + ", batch infos " + batchInfos.stream().map(BatchInfo::batchId).toList() + ", committed "
                    + committed + " (" + commitProofs.size() + " with proof)]";
        }
    }

    /**
     * A leader replica's proof, attached to its {@link RecoveryState}, that it committed a batch (review rv19-3): the
     * TENTATIVE_COMMIT it signed ({@code tentative}, its own signature: statement leader region = its region) and the
     * batch's client-signed {@link BatchInfo}, which the client sends only to the batch's leader region ({@code info};
     * null for a COMMIT reloaded from the disk after a restart, whose BatchInfo was not recorded). A mount counts a
     * "committed" report only with such a proof, and re-sends the BatchInfo to the batch's leader replicas (rv19-2,
     * {@link RecoveryBatchInfo}).
     */
    record CommitProof(Certificate tentative, BatchInfo info) {
        /** The batch the TENTATIVE_COMMIT names (a proof of another kind names none: -1). */
        public long batchId() {
            return tentative.statement() instanceof io.salus.core.cert.Statement.Decision d ? d.batchId() : -1;
        }
    }

    /**
     * The mounting client → a leader replica of {@code info}'s batch (review rv19-2): the previous writer's
     * client-signed BatchInfo again, as a leader replica that signed COMMIT for the batch reported it with its proof
     * ({@link CommitProof}). Bound to the mount's fence: the client signs {@link #signedBytes} (the fence and the
     * whole BatchInfo), and a leader replica takes it only under the fence it holds, for a batch below it that it
     * logged as the batch's leader region, not decided, and not excluded by the LCP recorded for that recovery epoch.
     * Then it decides as on the original BatchInfo (unanimous YES votes, the previous batch's decision).
     */
    record RecoveryBatchInfo(String volume, long fence, BatchInfo info, byte[] signature) implements Message {
        public static byte[] signedBytes(String volume, long fence, BatchInfo info) {
            return new io.salus.core.cert.Wire.Out().u8(0x49).str8(volume).i64(fence).blob(info.signedBytes())
                    .toByteArray();
        }

        public byte[] signedBytes() {
            return signedBytes(volume, fence, info);
        }
    }

    /**
     * The mounting client → the three replicas of batch {@code batchId}'s leader region: recovery (identifyLCP,
     * §3.3.4) aborts this batch of the previous writer, which is after the LCP recorded in coordination for recovery
     * epoch {@code fence} (the mount's fence). Signed by the client over {@link #signedBytes}. A leader replica signs
     * TENTATIVE_ABORT(batch, firstSeq..lastSeq) only if it has not decided the batch, the request's fence is the one
     * it holds, the LCP of that epoch is recorded in coordination and ends before {@code firstSeq}, and it can show
     * the batch never commits: it holds no BatchInfo of it (so it never signs COMMIT for it), or {@code proof} holds
     * the signed {@link RecoveryState}s of the three replicas of a participant region, fenced above the batch, none
     * listing it.
     */
    record RecoveryAbort(String volume, long fence, long batchId, int leaderRegion, long firstSeq, long lastSeq,
                         java.util.List<RecoveryState> proof, byte[] signature) implements Message {
        public RecoveryAbort {
            proof = java.util.List.copyOf(proof);
        }

        public static byte[] signedBytes(String volume, long fence, long batchId, int leaderRegion, long firstSeq,
                                         long lastSeq) {
            return new io.salus.core.cert.Wire.Out().u8(0x53).str8(volume).i64(fence).i64(batchId).i32(leaderRegion)
                    .i64(firstSeq).i64(lastSeq).toByteArray();
        }

        public byte[] signedBytes() {
            return signedBytes(volume, fence, batchId, leaderRegion, firstSeq, lastSeq);
        }
    }
}
