package io.salus.core.protocol.message;

import io.salus.core.cert.Certificate;
import io.salus.core.cert.CertificateFormatException;
import io.salus.core.cert.StatementKind;
import io.salus.core.cert.Wire;
import io.salus.core.merkle.Hash;
import io.salus.core.merkle.MerkleProof;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

/**
 * The versioned, canonical wire encoding of every {@link Message} (the table is in
 * {@code docs/protocol.md}, section "Wire encoding of messages"). Big-endian, no padding:
 *
 * <pre>
 *   u8 codec version (= 2)   u8 message type code   body (per type)
 * </pre>
 *
 * Canonical: every message has exactly one encoding, and {@link #decode} accepts only that encoding
 * (trailing bytes, bad lengths, malformed UTF-8, a boolean other than 0/1, a certificate of the wrong
 * kind for the message, unknown versions or types are rejected with a
 * {@link CertificateFormatException} naming the field and the byte offset). Signatures are not checked
 * here; that is the receiver's job.
 *
 * <p>Kept apart from the message records so that a change of a record's fields touches one method
 * here, not the record's own code.
 */
public final class MessageCodec {
    /**
     * The codec version this build writes and reads. Version 2 added the writer epoch (sub-batch log entries of
     * version 2, BatchInfo's epoch) and the WRITER_FENCE / WRITER_EPOCH_REPLY messages; a version 1 message is
     * refused, never read as if it carried an epoch.
     */
    public static final int VERSION = 2;
    /** Deepest Merkle proof a GET reply may carry (levels of a tree over 2^64 blocks). */
    public static final int MAX_PROOF_LEVELS = 64;

    /** The stable type codes (since version 1). A code is never reused for another message. */
    public enum Type {
        SUB_BATCH(1, Message.SubBatchMsg.class),
        BATCH_INFO(2, Message.BatchInfoMsg.class),
        LOG_CERT(3, Message.LogCertMsg.class),
        STORE_ACK(4, Message.StoreAck.class),
        VOTE(5, Message.Vote.class),
        DECISION_REQUEST(6, Message.DecisionRequest.class),
        DECISION(7, Message.DecisionMsg.class),
        PUT_REPLY(8, Message.PutReply.class),
        GET_REQUEST(9, Message.GetRequest.class),
        GET_REPLY(10, Message.GetReply.class),
        CHECKPOINT_PROPOSE(11, Message.CheckpointPropose.class),
        CHECKPOINT_VOTE(12, Message.CheckpointVote.class),
        WRITER_FENCE(13, Message.WriterFence.class),
        WRITER_EPOCH_REPLY(14, Message.WriterEpochReply.class),
        MOUNT_QUERY(15, Message.MountQuery.class),
        MOUNT_STATE(16, Message.MountState.class),
        STATE_REQUEST(17, Message.StateRequest.class),
        STATE_TRANSFER(18, Message.StateTransfer.class),
        CHECKPOINT_CERT(19, Message.CheckpointCert.class),
        RECOVERY_STATE(20, Message.RecoveryState.class),
        RECOVERY_ABORT(21, Message.RecoveryAbort.class),
        FLUSH_REQUEST(22, Message.FlushRequest.class),
        FLUSH_REPLY(23, Message.FlushReply.class),
        REBUILD_REQUEST(24, Message.RebuildRequest.class),
        REBUILD_BLOCKS(25, Message.RebuildBlocks.class),
        CHAIN_ACK(26, Message.ChainAck.class),
        RECOVERY_BATCH_INFO(27, Message.RecoveryBatchInfo.class),
        LEAF_QUERY(28, Message.LeafQuery.class),
        LEAF_CHUNK(29, Message.LeafChunk.class);

        private final int code;
        private final Class<? extends Message> cls;

        Type(int code, Class<? extends Message> cls) {
            this.code = code;
            this.cls = cls;
        }

        public int code() {
            return code;
        }

        public Class<? extends Message> messageClass() {
            return cls;
        }

        public static Type of(Message m) {
            for (Type t : values()) {
                if (t.cls.isInstance(m)) {
                    return t;
                }
            }
            throw new IllegalArgumentException("no wire type for " + m.getClass().getName()
                    + ": add it to MessageCodec.Type with a new code");
        }

        static Type fromCode(int code, int offset) {
            for (Type t : values()) {
                if (t.code == code) {
                    return t;
                }
            }
            throw new CertificateFormatException("unknown message type code " + code + " (this build knows 1.."
                    + values().length + ")", offset);
        }
    }

    private MessageCodec() {
    }

    /**
     * The canonical encoding of {@code m}.
     *
     * @throws IllegalArgumentException if a field cannot be encoded (a missing signature or proof, a
     *                                  string over 255 UTF-8 bytes, a proof deeper than 64 levels)
     */
    public static byte[] encode(Message m) {
        Type t = Type.of(m);
        Wire.Out o = new Wire.Out(capacityHint(m)).u8(VERSION).u8(t.code);
        switch (t) {
            case SUB_BATCH -> {
                SubBatch sb = ((Message.SubBatchMsg) m).subBatch();
                requireSigned(sb.clientSig(), "SubBatch.clientSig");
                o.blob(sb.encode());
            }
            case BATCH_INFO -> writeBatchInfo(o, ((Message.BatchInfoMsg) m).info());
            case LOG_CERT -> o.blob(cert(((Message.LogCertMsg) m).tentative(), t));
            case STORE_ACK -> {
                Message.StoreAck a = (Message.StoreAck) m;
                o.i32(a.region()).i64(a.generation()).i64(a.index()).hash(a.digest())
                        .blob(requireSigned(a.signature(), "StoreAck.signature"));
            }
            case VOTE -> {
                Message.Vote v = (Message.Vote) m;
                o.i64(v.batchId()).i32(v.region()).i64(v.generation()).u8(v.yes() ? 1 : 0)
                        .blob(requireSigned(v.signature(), "Vote.signature"));
            }
            case DECISION_REQUEST -> {
                Message.DecisionRequest r = (Message.DecisionRequest) m;
                o.i32(r.leaderRegion());
                o.i64(r.batchId());
            }
            case DECISION -> o.blob(cert(((Message.DecisionMsg) m).tentative(), t));
            case PUT_REPLY -> o.blob(cert(((Message.PutReply) m).tentative(), t));
            case GET_REQUEST -> {
                Message.GetRequest g = (Message.GetRequest) m;
                o.i64(g.requestId()).i64(g.block()).i64(g.prevNum());
            }
            case GET_REPLY -> {
                Message.GetReply g = (Message.GetReply) m;
                if (g.data() == null || g.proof() == null) {
                    throw new IllegalArgumentException("GetReply without data or proof cannot be encoded");
                }
                MerkleProof p = g.proof();
                if (p.siblings().size() > MAX_PROOF_LEVELS) {
                    throw new IllegalArgumentException("proof of " + p.siblings().size() + " levels exceeds "
                            + MAX_PROOF_LEVELS);
                }
                o.i64(g.requestId()).i64(g.block()).blob(g.data()).i64(g.appliedSeq())
                        .i64(p.block()).hash(p.leaf()).u8(p.siblings().size());
                for (Hash h : p.siblings()) {
                    o.hash(h);
                }
            }
            case CHECKPOINT_PROPOSE -> {
                Message.CheckpointPropose c = (Message.CheckpointPropose) m;
                o.i32(c.region()).i64(c.generation()).i64(c.throughIndex());
            }
            case CHECKPOINT_VOTE -> o.blob(cert(((Message.CheckpointVote) m).tentative(), t));
            case CHECKPOINT_CERT -> o.blob(cert(((Message.CheckpointCert) m).checkpoint(), t));
            case WRITER_FENCE -> o.blob(cert(((Message.WriterFence) m).writerEpoch(), t));
            case FLUSH_REQUEST -> o.i64(((Message.FlushRequest) m).flushId());
            case FLUSH_REPLY -> {
                Message.FlushReply r = (Message.FlushReply) m;
                o.str8(r.volume()).i32(r.region()).i64(r.generation()).i64(r.flushId())
                        .blob(requireSigned(r.signature(), "FlushReply.signature"));
            }
            case WRITER_EPOCH_REPLY -> {
                Message.WriterEpochReply r = (Message.WriterEpochReply) m;
                o.str8(r.volume()).i32(r.region()).i64(r.batchId()).i64(r.clientEpoch()).i64(r.replicaEpoch())
                        .blob(requireSigned(r.signature(), "WriterEpochReply.signature"));
            }
            case MOUNT_QUERY -> {
                Message.MountQuery q = (Message.MountQuery) m;
                o.i64(q.nonce()).i64(q.fenceBelow()).u8(q.signature() == null ? 0 : 1);
                if (q.signature() != null) {
                    o.blob(q.signature());
                }
            }
            case MOUNT_STATE -> {
                Message.MountState s = (Message.MountState) m;
                o.i64(s.nonce()).str8(s.volume()).i32(s.region()).i64(s.generation()).i64(s.fenceBelow())
                        .i64(s.lastBatchId())
                        .i64(s.lastAcceptedSeq()).i64(s.loggedIndex()).i64(s.committedIndex()).i64(s.appliedSeq())
                        .hash(s.regionRoot()).hash(s.recordRoot()).i64(s.recordSeq())
                        .blob(requireSigned(s.signature(), "MountState.signature"));
            }
            case LEAF_QUERY -> {
                Message.LeafQuery q = (Message.LeafQuery) m;
                o.i64(q.nonce()).i32(q.region()).i64(q.fromBlock()).i64(q.toBlock());
            }
            case LEAF_CHUNK -> {
                Message.LeafChunk c = (Message.LeafChunk) m;
                o.i64(c.nonce()).str8(c.volume()).i32(c.region()).i64(c.generation()).hash(c.regionRoot())
                        .i64(c.fromBlock()).i64(c.toBlock()).i32(c.leaves().size());
                c.leaves().forEach((k, h) -> o.i64(k).hash(h));
                o.blob(requireSigned(c.signature(), "LeafChunk.signature"));
            }
            case STATE_REQUEST -> {
                Message.StateRequest r = (Message.StateRequest) m;
                o.i32(r.region()).i64(r.generation()).i64(r.throughIndex());
            }
            case STATE_TRANSFER -> {
                Message.StateTransfer x = (Message.StateTransfer) m;
                o.i32(x.region()).i64(x.generation()).i64(x.throughIndex()).i64(x.lastSeq()).hash(x.recordRoot())
                        .i64(x.recordSeq()).i32(x.blocks().size());
                for (Message.StateBlock b : x.blocks()) {
                    o.i64(b.localBlock()).blob(b.data());
                }
                o.i32(x.entries().size());
                x.entries().forEach(o::blob);
                o.i32(x.decisions().size());
                x.decisions().forEach(c -> o.blob(cert(c, t)));
                o.i32(x.leaves().size());
                x.leaves().forEach((k, h) -> o.i64(k).hash(h));
            }
            case REBUILD_REQUEST -> {
                Message.RebuildRequest r = (Message.RebuildRequest) m;
                o.i32(r.region()).i64(r.generation()).i64(r.throughIndex()).i32(r.blocks().size());
                r.blocks().forEach(o::i64);
            }
            case REBUILD_BLOCKS -> {
                Message.RebuildBlocks x = (Message.RebuildBlocks) m;
                o.i32(x.region()).i64(x.generation()).i64(x.throughIndex()).i32(x.blocks().size());
                for (Message.StateBlock b : x.blocks()) {
                    o.i64(b.localBlock()).blob(b.data());
                }
            }
            case CHAIN_ACK -> {
                Message.ChainAck a = (Message.ChainAck) m;
                o.i32(a.region()).i64(a.generation()).i64(a.index()).hash(a.digest());
            }
            case RECOVERY_STATE -> writeRecoveryState(o, (Message.RecoveryState) m);
            case RECOVERY_ABORT -> {
                Message.RecoveryAbort a = (Message.RecoveryAbort) m;
                o.str8(a.volume()).i64(a.fence()).i64(a.batchId()).i32(a.leaderRegion()).i64(a.firstSeq())
                        .i64(a.lastSeq()).i32(a.proof().size());
                a.proof().forEach(x -> writeRecoveryState(o, x));
                o.blob(requireSigned(a.signature(), "RecoveryAbort.signature"));
            }
            case RECOVERY_BATCH_INFO -> {
                Message.RecoveryBatchInfo r = (Message.RecoveryBatchInfo) m;
                o.str8(r.volume()).i64(r.fence());
                writeBatchInfo(o, r.info());
                o.blob(requireSigned(r.signature(), "RecoveryBatchInfo.signature"));
            }
            default -> throw new AssertionError(t);
        }
        return o.toByteArray();
    }

    private static void writeBatchInfo(Wire.Out o, BatchInfo i) {
        o.str8(i.volume()).i64(i.batchId()).i64(i.firstSeq()).i64(i.lastSeq()).i32(i.participants().size());
        for (int p : i.participants()) {
            o.i32(p);
        }
        o.i64(i.prevBatchId()).i32(i.prevLeaderRegion()).i64(i.epoch())
                .blob(requireSigned(i.clientSig(), "BatchInfo.clientSig"));
    }

    private static void writeRecoveryState(Wire.Out o, Message.RecoveryState s) {
        o.i64(s.nonce()).str8(s.volume()).i32(s.region()).i64(s.generation()).str8(s.replica().name())
                .i64(s.fenceBelow()).i32(s.pending().size());
        for (Message.PendingEntry e : s.pending()) {
            o.i64(e.batchId()).i32(e.leaderRegion()).i32(e.seqs().size());
            e.seqs().forEach(o::i64);
        }
        o.i32(s.batchInfos().size());
        s.batchInfos().forEach(b -> writeBatchInfo(o, b));
        o.i32(s.committed().size());
        s.committed().forEach(o::i64);
        o.i32(s.commitProofs().size());
        for (Message.CommitProof p : s.commitProofs()) {
            o.blob(cert(p.tentative(), Type.RECOVERY_STATE)).u8(p.info() == null ? 0 : 1);
            if (p.info() != null) {
                writeBatchInfo(o, p.info());
            }
        }
        o.blob(requireSigned(s.signature(), "RecoveryState.signature"));
    }

    private static BatchInfo readBatchInfo(Wire.In in) {
        String volume = in.str8("volume");
        long batchId = in.i64("batch id");
        long firstSeq = in.i64("first seq");
        long lastSeq = in.i64("last seq");
        int n = in.i32("participant count");
        if (n < 0 || n > in.remaining() / 4) {
            throw new CertificateFormatException("participant count " + n + " does not fit the "
                    + in.remaining() + " bytes left", in.pos() - 4);
        }
        List<Integer> participants = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            participants.add(in.i32("participant " + i));
        }
        long prevBatch = in.i64("previous batch id");
        int prevLeader = in.i32("previous leader region");
        long epoch = in.i64("writer epoch");
        if (epoch < 0) {
            throw new CertificateFormatException("writer epoch " + epoch + " < 0", in.pos() - 8);
        }
        byte[] sig = in.blob("client signature");
        return new BatchInfo(volume, batchId, firstSeq, lastSeq, participants, prevBatch, prevLeader, epoch, sig);
    }

    private static Message.RecoveryState readRecoveryState(Wire.In in) {
        long nonce = in.i64("nonce");
        String volume = in.str8("volume");
        int region = in.i32("region");
        long generation = in.i64("generation");
        int at = in.pos();
        String name = in.str8("replica");
        io.salus.core.crypto.NodeId replica;
        try {
            replica = io.salus.core.crypto.NodeId.of(name);
        } catch (IllegalArgumentException e) {
            throw new CertificateFormatException("replica id: " + e.getMessage(), at);
        }
        long fence = in.i64("fence");
        int n = count(in, 16, "pending entry count");
        List<Message.PendingEntry> pending = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            long batch = in.i64("pending batch id " + i);
            int leader = in.i32("pending leader region " + i);
            int k = count(in, 8, "pending seq count " + i);
            List<Long> seqs = new ArrayList<>(k);
            for (int j = 0; j < k; j++) {
                seqs.add(in.i64("pending seq " + j));
            }
            pending.add(new Message.PendingEntry(batch, leader, seqs));
        }
        int b = count(in, 40, "batch info count");
        List<BatchInfo> infos = new ArrayList<>(b);
        for (int i = 0; i < b; i++) {
            infos.add(readBatchInfo(in));
        }
        int d = count(in, 8, "committed count");
        List<Long> committed = new ArrayList<>(d);
        for (int i = 0; i < d; i++) {
            committed.add(in.i64("committed batch id " + i));
        }
        int c = count(in, 5, "commit proof count");
        List<Message.CommitProof> proofs = new ArrayList<>(c);
        for (int i = 0; i < c; i++) {
            Certificate t = cert(in, Type.RECOVERY_STATE);
            proofs.add(new Message.CommitProof(t, bool(in, "commit proof " + i + " has a BatchInfo") ? readBatchInfo(in)
                    : null));
        }
        return new Message.RecoveryState(nonce, volume, region, generation, replica, fence, pending, infos,
                committed, proofs, in.blob("replica signature"));
    }

    /** About the encoded size, so that block-carrying messages are written without regrowing the buffer. */
    private static int capacityHint(Message m) {
        if (m instanceof Message.SubBatchMsg s) {
            long n = 512;
            for (Put p : s.subBatch().puts()) {
                n += 96 + p.data().length;
            }
            return (int) Math.min(n, 1 << 30);
        }
        if (m instanceof Message.LeafChunk c) {
            return (int) Math.min(512L + (8L + Hash.LENGTH) * c.leaves().size(), 1 << 30);
        }
        if (m instanceof Message.StateTransfer x) {
            long n = 512;
            for (Message.StateBlock b : x.blocks()) {
                n += 12 + b.data().length;
            }
            for (byte[] e : x.entries()) {
                n += 4 + e.length;
            }
            return (int) Math.min(n + 1024L * x.decisions().size(), 1 << 30);
        }
        if (m instanceof Message.RebuildBlocks x) {
            long n = 512;
            for (Message.StateBlock b : x.blocks()) {
                n += 12 + b.data().length;
            }
            return (int) Math.min(n, 1 << 30);
        }
        if (m instanceof Message.GetReply g && g.data() != null && g.proof() != null) {
            return 128 + g.data().length + Hash.LENGTH * g.proof().siblings().size();
        }
        return 256;
    }

    /** Decodes {@link #encode} output; the whole array must be one message. */
    public static Message decode(byte[] b) {
        if (b == null) {
            throw new CertificateFormatException("no message bytes (null)", 0);
        }
        Wire.In in = new Wire.In(b);
        int version = in.u8("codec version");
        if (version != VERSION) {
            throw new CertificateFormatException("unsupported message codec version " + version
                    + " (this build reads version " + VERSION + (version == 1 ? "; version 1 carries no writer epoch:"
                    + " run the same build on the clients and every region server" : "") + ")", 0);
        }
        Type t = Type.fromCode(in.u8("message type"), 1);
        Message m;
        try {
            m = body(t, in);
        } catch (CertificateFormatException e) {
            throw e;
        } catch (IllegalArgumentException e) {
            // a record's own invariant refused the decoded fields
            throw new CertificateFormatException(t + " message has invalid fields: " + e.getMessage(), in.pos());
        }
        in.expectEnd(t + " message");
        return m;
    }

    private static Message body(Type t, Wire.In in) {
        return switch (t) {
            case SUB_BATCH -> {
                int start = in.pos() + 4;
                byte[] entry = in.blob("sub-batch");
                try {
                    yield new Message.SubBatchMsg(SubBatch.decode(entry));
                } catch (CertificateFormatException e) {
                    throw e.within("sub-batch", start);
                }
            }
            case BATCH_INFO -> new Message.BatchInfoMsg(readBatchInfo(in));
            case LOG_CERT -> new Message.LogCertMsg(cert(in, t));
            case STORE_ACK -> {
                int region = in.i32("region");
                long generation = in.i64("generation");
                long index = in.i64("log index");
                Hash digest = in.hash("entry digest");
                yield new Message.StoreAck(region, generation, index, digest, in.blob("store signature"));
            }
            case CHAIN_ACK -> {
                int region = in.i32("region");
                long generation = in.i64("generation");
                long index = in.i64("log index");
                yield new Message.ChainAck(region, generation, index, in.hash("entry digest"));
            }
            case VOTE -> {
                long batchId = in.i64("batch id");
                int region = in.i32("region");
                long generation = in.i64("generation");
                boolean yes = bool(in, "vote");
                yield new Message.Vote(batchId, region, generation, yes, in.blob("vote signature"));
            }
            case DECISION_REQUEST -> {
                int leaderRegion = in.i32("leader region");
                yield new Message.DecisionRequest(leaderRegion, in.i64("batch id"));
            }
            case DECISION -> new Message.DecisionMsg(cert(in, t));
            case PUT_REPLY -> new Message.PutReply(cert(in, t));
            case GET_REQUEST -> new Message.GetRequest(in.i64("request id"), in.i64("block"), in.i64("prevNum"));
            case GET_REPLY -> {
                long requestId = in.i64("request id");
                long block = in.i64("block");
                byte[] data = in.blob("block data");
                long applied = in.i64("applied seq");
                long proofBlock = in.i64("proof block");
                Hash leaf = in.hash("proof leaf");
                int levels = in.u8("proof levels");
                if (levels > MAX_PROOF_LEVELS) {
                    throw new CertificateFormatException("proof of " + levels + " levels exceeds "
                            + MAX_PROOF_LEVELS, in.pos() - 1);
                }
                List<Hash> siblings = new ArrayList<>(levels);
                for (int i = 0; i < levels; i++) {
                    siblings.add(in.hash("proof sibling " + i));
                }
                yield new Message.GetReply(requestId, block, data, applied, new MerkleProof(proofBlock, leaf, siblings));
            }
            case CHECKPOINT_PROPOSE -> new Message.CheckpointPropose(in.i32("region"), in.i64("generation"),
                    in.i64("through index"));
            case CHECKPOINT_VOTE -> new Message.CheckpointVote(cert(in, t));
            case CHECKPOINT_CERT -> new Message.CheckpointCert(cert(in, t));
            case RECOVERY_STATE -> readRecoveryState(in);
            case RECOVERY_ABORT -> {
                String volume = in.str8("volume");
                long fence = in.i64("fence");
                long batch = in.i64("batch id");
                int leader = in.i32("leader region");
                long first = in.i64("first seq");
                long last = in.i64("last seq");
                int n = count(in, 40, "proof count");
                List<Message.RecoveryState> proof = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    proof.add(readRecoveryState(in));
                }
                yield new Message.RecoveryAbort(volume, fence, batch, leader, first, last, proof,
                        in.blob("client signature"));
            }
            case RECOVERY_BATCH_INFO -> new Message.RecoveryBatchInfo(in.str8("volume"), in.i64("fence"),
                    readBatchInfo(in), in.blob("client signature"));
            case WRITER_FENCE -> new Message.WriterFence(cert(in, t));
            case FLUSH_REQUEST -> new Message.FlushRequest(in.i64("flush id"));
            case FLUSH_REPLY -> new Message.FlushReply(in.str8("volume"), in.i32("region"), in.i64("generation"),
                    in.i64("flush id"), in.blob("replica signature"));
            case WRITER_EPOCH_REPLY -> new Message.WriterEpochReply(in.str8("volume"), in.i32("region"),
                    in.i64("batch id"), in.i64("client epoch"), in.i64("replica epoch"), in.blob("replica signature"));
            case MOUNT_QUERY -> {
                long nonce = in.i64("nonce");
                long fence = in.i64("fence");
                boolean signed = bool(in, "signed");
                yield new Message.MountQuery(nonce, fence, signed ? in.blob("client signature") : null);
            }
            case MOUNT_STATE -> {
                long nonce = in.i64("nonce");
                String volume = in.str8("volume");
                int region = in.i32("region");
                long generation = in.i64("generation");
                long fence = in.i64("fence");
                long lastBatch = in.i64("last batch id");
                long accepted = in.i64("last accepted seq");
                long logged = in.i64("logged index");
                long committed = in.i64("committed index");
                long applied = in.i64("applied seq");
                Hash regionRoot = in.hash("region root");
                Hash recordRoot = in.hash("root record root");
                long recordSeq = in.i64("root record seq");
                yield new Message.MountState(nonce, volume, region, generation, fence, lastBatch, accepted, logged, committed,
                        applied, regionRoot, recordRoot, recordSeq, in.blob("replica signature"));
            }
            case LEAF_QUERY -> new Message.LeafQuery(in.i64("nonce"), in.i32("region"), in.i64("from block"),
                    in.i64("to block"));
            case LEAF_CHUNK -> {
                long nonce = in.i64("nonce");
                String volume = in.str8("volume");
                int region = in.i32("region");
                long generation = in.i64("generation");
                Hash regionRoot = in.hash("region root");
                long from = in.i64("from block");
                long to = in.i64("to block");
                int n = in.i32("leaf count");
                if (n < 0 || n > Message.LeafQuery.MAX_BLOCKS || n > in.remaining() / (8 + Hash.LENGTH)) {
                    throw new CertificateFormatException("leaf count " + n + " does not fit the " + in.remaining()
                            + " bytes left", in.pos() - 4);
                }
                java.util.TreeMap<Long, Hash> leaves = new java.util.TreeMap<>();
                long prev = from - 1;
                for (int i = 0; i < n; i++) {
                    int at = in.pos();
                    long k = in.i64("leaf index " + i);
                    if (k <= prev || k >= to) {
                        throw new CertificateFormatException("leaf index " + k + " is not above the previous one "
                                + prev + " and below the chunk's end " + to + " (leaves must be strictly increasing,"
                                + " inside the chunk's range)", at);
                    }
                    prev = k;
                    leaves.put(k, in.hash("leaf hash " + i));
                }
                yield new Message.LeafChunk(nonce, volume, region, generation, regionRoot, from, to, leaves,
                        in.blob("replica signature"));
            }
            case STATE_REQUEST -> new Message.StateRequest(in.i32("region"), in.i64("generation"),
                    in.i64("through index"));
            case STATE_TRANSFER -> {
                int region = in.i32("region");
                long generation = in.i64("generation");
                long through = in.i64("through index");
                long lastSeq = in.i64("last seq");
                Hash recordRoot = in.hash("root record root");
                long recordSeq = in.i64("root record seq");
                int n = count(in, 12, "block count");
                List<Message.StateBlock> blocks = new ArrayList<>(n);
                long prev = -1;
                for (int i = 0; i < n; i++) {
                    int at = in.pos();
                    long k = in.i64("block index " + i);
                    if (k <= prev) {
                        throw new CertificateFormatException("block index " + k + " is not above the previous one "
                                + prev + " (blocks must be strictly increasing)", at);
                    }
                    prev = k;
                    blocks.add(new Message.StateBlock(k, in.blob("block " + i)));
                }
                int e = count(in, 4, "entry count");
                List<byte[]> entries = new ArrayList<>(e);
                for (int i = 0; i < e; i++) {
                    entries.add(in.blob("log entry " + i));
                }
                int c = count(in, 4, "decision count");
                List<Certificate> decisions = new ArrayList<>(c);
                for (int i = 0; i < c; i++) {
                    decisions.add(cert(in, t));
                }
                int l = count(in, 8 + Hash.LENGTH, "leaf hash count");
                java.util.TreeMap<Long, Hash> leaves = new java.util.TreeMap<>();
                long prevLeaf = -1;
                for (int i = 0; i < l; i++) {
                    int at = in.pos();
                    long k = in.i64("leaf index " + i);
                    if (k <= prevLeaf) {
                        throw new CertificateFormatException("leaf index " + k + " is not above the previous one "
                                + prevLeaf + " (leaves must be strictly increasing)", at);
                    }
                    prevLeaf = k;
                    leaves.put(k, in.hash("leaf hash " + i));
                }
                yield new Message.StateTransfer(region, generation, through, lastSeq, recordRoot, recordSeq, blocks,
                        entries, decisions, leaves);
            }
            case REBUILD_REQUEST -> {
                int region = in.i32("region");
                long generation = in.i64("generation");
                long through = in.i64("through index");
                int n = count(in, 8, "block count");
                List<Long> blocks = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    blocks.add(in.i64("block index " + i));
                }
                yield new Message.RebuildRequest(region, generation, through, blocks);
            }
            case REBUILD_BLOCKS -> {
                int region = in.i32("region");
                long generation = in.i64("generation");
                long through = in.i64("through index");
                int n = count(in, 12, "block count");
                List<Message.StateBlock> blocks = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    long k = in.i64("block index " + i);
                    blocks.add(new Message.StateBlock(k, in.blob("block " + i)));
                }
                yield new Message.RebuildBlocks(region, generation, through, blocks);
            }
        };
    }

    /** The statement kinds a certificate-carrying message may hold. */
    public static Set<StatementKind> certificateKinds(Type t) {
        return switch (t) {
            case LOG_CERT -> EnumSet.of(StatementKind.LOG_ENTRY);
            case DECISION -> EnumSet.of(StatementKind.COMMIT, StatementKind.ABORT);
            case PUT_REPLY -> EnumSet.of(StatementKind.PUT_SUCCESS, StatementKind.PUT_FAILED);
            case CHECKPOINT_VOTE, CHECKPOINT_CERT -> EnumSet.of(StatementKind.CHECKPOINT);
            case WRITER_FENCE -> EnumSet.of(StatementKind.WRITER_EPOCH);
            case STATE_TRANSFER -> EnumSet.of(StatementKind.COMMIT, StatementKind.ABORT, StatementKind.WRITER_EPOCH);
            case RECOVERY_STATE -> EnumSet.of(StatementKind.COMMIT); // commit proofs, also inside a RecoveryAbort (rv19-3)
            default -> EnumSet.noneOf(StatementKind.class);
        };
    }

    private static byte[] cert(Certificate c, Type t) {
        if (!certificateKinds(t).contains(c.type().kind())) {
            throw new IllegalArgumentException(t + " message carries " + certificateKinds(t) + " certificates, not "
                    + c.type());
        }
        return c.encode();
    }

    private static Certificate cert(Wire.In in, Type t) {
        String what = t + " certificate";
        int start = in.pos() + 4;
        byte[] bytes = in.blob(what);
        Certificate c;
        try {
            c = Certificate.decode(bytes);
        } catch (CertificateFormatException e) {
            throw e.within(what, start);
        }
        if (!certificateKinds(t).contains(c.type().kind())) {
            throw new CertificateFormatException(t + " message carries " + certificateKinds(t)
                    + " certificates, not " + c.type(), start + 1);
        }
        return c;
    }

    /** A count of items of at least {@code minBytes} bytes each, checked against what is left. */
    private static int count(Wire.In in, int minBytes, String what) {
        int n = in.i32(what);
        if (n < 0 || n > in.remaining() / minBytes) {
            throw new CertificateFormatException(what + " " + n + " does not fit the " + in.remaining()
                    + " bytes left", in.pos() - 4);
        }
        return n;
    }

    private static boolean bool(Wire.In in, String what) {
        int v = in.u8(what);
        if (v > 1) {
            throw new CertificateFormatException(what + " must be 0 or 1, got " + v, in.pos() - 1);
        }
        return v == 1;
    }

    private static byte[] requireSigned(byte[] sig, String field) {
        if (sig == null) {
            throw new IllegalArgumentException(field + " is null: sign the message before encoding it");
        }
        return sig;
    }
}
