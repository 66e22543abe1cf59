package io.salus.core.bench;

import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import io.salus.core.cert.Statement;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.NodeKeys;
import io.salus.core.crypto.SignatureScheme;
import io.salus.core.crypto.Signer;
import io.salus.core.merkle.Hash;
import io.salus.core.merkle.HashAlgorithm;
import io.salus.core.merkle.MerkleProof;
import io.salus.core.protocol.message.BatchInfo;
import io.salus.core.protocol.message.Message;
import io.salus.core.protocol.message.MessageCodec;
import io.salus.core.protocol.message.Put;
import io.salus.core.protocol.message.SubBatch;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * Cost of {@link MessageCodec} per message type (JMH; not a test). The baseline is {@link #copy}, a
 * copy of the same encoded bytes: the least any codec must spend to move them. Run through
 * {@link MessageCodecBenchmarkMain}, which writes CSV + PNG.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class MessageCodecBenchmark {
    @Param({"SUB_BATCH", "BATCH_INFO", "LOG_CERT", "STORE_ACK", "VOTE", "DECISION_REQUEST", "DECISION", "PUT_REPLY",
        "GET_REQUEST", "GET_REPLY", "CHECKPOINT_PROPOSE", "CHECKPOINT_VOTE"})
    public String type;

    Message message;
    byte[] bytes;

    @Setup
    public void setup() {
        message = sample(MessageCodec.Type.valueOf(type));
        bytes = MessageCodec.encode(message);
    }

    @Benchmark
    public byte[] encode() {
        return MessageCodec.encode(message);
    }

    @Benchmark
    public Message decode() {
        return MessageCodec.decode(bytes);
    }

    @Benchmark
    public byte[] copy() {
        return bytes.clone();
    }

    /**
     * A typical message of each type: one 4 KiB PUT per sub-batch, a 4 KiB block with a 20-level proof
     * in a GET reply, a 3-region batch, and tentative certificates signed with the paper's weak scheme.
     */
    public static Message sample(MessageCodec.Type t) {
        RegionId region = new RegionId("volume-0001", 17);
        Hash h = HashAlgorithm.SHA256.hash(new byte[] {1, 2, 3});
        byte[] block = new byte[4096];
        for (int i = 0; i < block.length; i++) {
            block[i] = (byte) (i * 31);
        }
        Signer s = NodeKeys.deterministic(SignatureScheme.WEAK_CRC32C, NodeId.of("rs-17-0"), 7).signer();
        byte[] sig = new byte[4];
        return switch (t) {
            case SUB_BATCH -> new Message.SubBatchMsg(new SubBatch("volume-0001", 17, 99, 3,
                    List.of(new Put(1000, 990, 17 * 65536 + 5, block, HashAlgorithm.SHA256.leafHash(block), h)), sig));
            case BATCH_INFO -> new Message.BatchInfoMsg(new BatchInfo("volume-0001", 99, 1000, 1249,
                    List.of(3, 17, 40), 98, 5, sig));
            case LOG_CERT -> new Message.LogCertMsg(Certificate.sign(CertType.TENTATIVE_LOG_ENTRY,
                    new Statement.LogEntry(region, 3, 123_456, h, 4200), s));
            case STORE_ACK -> new Message.StoreAck(17, 3, 123_456, h, sig);
            case VOTE -> new Message.Vote(99, 17, 3, true, sig);
            case DECISION_REQUEST -> new Message.DecisionRequest(1, 99);
            case DECISION -> new Message.DecisionMsg(Certificate.sign(CertType.TENTATIVE_COMMIT,
                    new Statement.Decision(true, "volume-0001", 99, 1000, 1249, new RegionId("volume-0001", 3), 2), s));
            case PUT_REPLY -> new Message.PutReply(Certificate.sign(CertType.TENTATIVE_PUT_SUCCESS,
                    new Statement.PutOutcome(true, region, 99, 1000, 1249, 123_456, h), s));
            case GET_REQUEST -> new Message.GetRequest(7, 17 * 65536 + 5, 990);
            case GET_REPLY -> {
                List<Hash> sib = new ArrayList<>();
                for (int i = 0; i < 20; i++) {
                    sib.add(HashAlgorithm.SHA256.hash(new byte[] {(byte) i}));
                }
                yield new Message.GetReply(7, 17 * 65536 + 5, block, 1000, new MerkleProof(5, h, sib));
            }
            case CHECKPOINT_PROPOSE -> new Message.CheckpointPropose(17, 3, 123_456);
            case CHECKPOINT_VOTE -> new Message.CheckpointVote(Certificate.sign(CertType.TENTATIVE_CHECKPOINT,
                    new Statement.Checkpoint(region, 3, 123_456, 1249, h, h), s));
            case CHECKPOINT_CERT -> new Message.CheckpointCert(Certificate.sign(CertType.TENTATIVE_CHECKPOINT,
                    new Statement.Checkpoint(region, 3, 123_456, 1249, h, h), s));
            case WRITER_FENCE -> new Message.WriterFence(Certificate.sign(CertType.WRITER_EPOCH,
                    new Statement.WriterEpoch("volume-0001", 4_294_967_301L), s));
            case WRITER_EPOCH_REPLY -> new Message.WriterEpochReply("volume-0001", 17, 99, 4_294_967_301L,
                    4_294_967_301L, sig);
            case MOUNT_QUERY -> new Message.MountQuery(99, 1L << 32, sig);
            case MOUNT_STATE -> new Message.MountState(99, "volume-0001", 17, 3, 1L << 32, 99, 1249, 123_456, 123_456, 1249, h, h,
                    1249, sig);
            case LEAF_QUERY -> new Message.LeafQuery(99, 17, 0, Message.LeafQuery.MAX_BLOCKS);
            case LEAF_CHUNK -> new Message.LeafChunk(99, "volume-0001", 17, 3, h, 0, Message.LeafQuery.MAX_BLOCKS,
                    new java.util.TreeMap<>(java.util.Map.of(5L, h)), sig);
            case STATE_REQUEST -> new Message.StateRequest(17, 3, 123_455);
            case FLUSH_REQUEST -> new Message.FlushRequest(12);
            case FLUSH_REPLY -> new Message.FlushReply("volume-0001", 17, 3, 12, sig);
            case STATE_TRANSFER -> new Message.StateTransfer(17, 3, 123_455, 1249, h, 1249,
                    List.of(new Message.StateBlock(5, block)), List.of(), List.of());
            case RECOVERY_STATE -> recoveryState(sig);
            case RECOVERY_ABORT -> new Message.RecoveryAbort("volume-0001", 1L << 32, 99, 17, 1249, 1252,
                    List.of(recoveryState(sig), recoveryState(sig), recoveryState(sig)), sig);
            case REBUILD_REQUEST -> new Message.RebuildRequest(17, 3, 123_455, List.of(5L, 6L));
            case REBUILD_BLOCKS -> new Message.RebuildBlocks(17, 3, 123_455, List.of(new Message.StateBlock(5, block)));
            case CHAIN_ACK -> new Message.ChainAck(17, 3, 123_456, h);
            case RECOVERY_BATCH_INFO -> new Message.RecoveryBatchInfo("volume-0001", 1L << 32,
                    new io.salus.core.protocol.message.BatchInfo("volume-0001", 98, 1249, 1252, List.of(17, 18), 97, 17,
                            sig), sig);
        };
    }

    static Message.RecoveryState recoveryState(byte[] sig) {
        return new Message.RecoveryState(99, "volume-0001", 17, 3, io.salus.core.crypto.NodeId.of("volume-0001/17/r0"),
                1L << 32, List.of(new Message.PendingEntry(98, 17, List.of(1249L, 1250L))), List.of(), sig);
    }
}
