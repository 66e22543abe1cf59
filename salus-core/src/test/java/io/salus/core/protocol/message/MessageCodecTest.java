package io.salus.core.protocol.message;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.salus.core.cert.CanonicalFuzz;
import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.cert.CertificateFormatException;
import io.salus.core.cert.RegionId;
import io.salus.core.cert.Statement;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.NodeKeys;
import io.salus.core.crypto.SignatureScheme;
import io.salus.core.crypto.Signer;
import io.salus.core.merkle.Hash;
import io.salus.core.merkle.HashAlgorithm;
import io.salus.core.merkle.MerkleProof;
import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Round trips and hostile inputs for {@link MessageCodec}, covering every {@link Message} type. */
class MessageCodecTest {

    /** Random but valid messages of every type; {@code rnd} picks sizes, values, schemes and names. */
    static final class Samples {
        private final Random rnd;
        /** Key generation (Ed25519 above all) costs more than the codec: a few signers, made once. */
        private final List<Signer> signers = new ArrayList<>();

        Samples(long seed) {
            this.rnd = new Random(seed);
            for (SignatureScheme s : SignatureScheme.values()) {
                for (String n : new String[] {"rs1", "rs17-\u00fc"}) {
                    signers.add(NodeKeys.deterministic(s, NodeId.of(n), seed).signer());
                }
            }
        }

        String volume() {
            // ASCII and multi-byte UTF-8 (2-, 3- and 4-byte sequences), 1..40 chars
            String[] parts = {"vol", "ä", "€", "\uD83D\uDCBE", "_7", "x"};
            StringBuilder b = new StringBuilder();
            int n = 1 + rnd.nextInt(8);
            for (int i = 0; i < n; i++) {
                b.append(parts[rnd.nextInt(parts.length)]);
            }
            return b.toString();
        }

        byte[] bytes(int max) {
            byte[] b = new byte[rnd.nextInt(max + 1)];
            rnd.nextBytes(b);
            return b;
        }

        Hash hash() {
            return HashAlgorithm.SHA256.hash(bytes(16));
        }

        long anyLong() {
            return rnd.nextInt(4) == 0 ? rnd.nextLong() : rnd.nextInt(1000);
        }

        Signer signer() {
            return signers.get(rnd.nextInt(signers.size()));
        }

        RegionId region() {
            return new RegionId(volume(), rnd.nextInt(64));
        }

        Certificate cert(CertType type, Statement st) {
            return Certificate.sign(type, st, signer());
        }

        Certificate logEntry() {
            return cert(CertType.TENTATIVE_LOG_ENTRY, new Statement.LogEntry(region(), rnd.nextInt(9),
                    rnd.nextInt(1 << 20), hash(), rnd.nextInt(1 << 20)));
        }

        Certificate decision() {
            boolean commit = rnd.nextBoolean();
            long f = rnd.nextInt(1000);
            return cert(commit ? CertType.TENTATIVE_COMMIT : CertType.TENTATIVE_ABORT,
                    new Statement.Decision(commit, volume(), anyLong(), f, f + rnd.nextInt(50), region(),
                            rnd.nextInt(5)));
        }

        Certificate putOutcome() {
            boolean ok = rnd.nextBoolean();
            long f = rnd.nextInt(1000);
            return cert(ok ? CertType.TENTATIVE_PUT_SUCCESS : CertType.TENTATIVE_PUT_FAILED,
                    new Statement.PutOutcome(ok, region(), anyLong(), f, f + rnd.nextInt(50), rnd.nextInt(1000),
                            hash()));
        }

        Certificate checkpoint() {
            return cert(CertType.TENTATIVE_CHECKPOINT, new Statement.Checkpoint(region(), rnd.nextInt(9),
                    rnd.nextInt(1000), rnd.nextInt(1000), hash(), hash()));
        }

        SubBatch subBatch() {
            List<Put> puts = new ArrayList<>();
            int n = 1 + rnd.nextInt(4);
            long seq = rnd.nextInt(1000);
            for (int i = 0; i < n; i++) {
                byte[] d = bytes(64);
                puts.add(new Put(seq + i, rnd.nextInt(1000), anyLong(), d, HashAlgorithm.SHA256.leafHash(d), hash()));
            }
            return new SubBatch(volume(), rnd.nextInt(64), anyLong(), rnd.nextInt(64), rnd.nextLong() & Long.MAX_VALUE,
                    puts, bytes(64));
        }

        Message.RecoveryState recoveryState() {
            List<Message.PendingEntry> pending = new ArrayList<>();
            for (int i = rnd.nextInt(4); i > 0; i--) {
                List<Long> seqs = new ArrayList<>();
                for (int j = 1 + rnd.nextInt(4); j > 0; j--) {
                    seqs.add((long) rnd.nextInt(1000));
                }
                pending.add(new Message.PendingEntry(anyLong(), rnd.nextInt(64), seqs));
            }
            List<BatchInfo> infos = new ArrayList<>();
            for (int i = rnd.nextInt(3); i > 0; i--) {
                long f = rnd.nextInt(1000);
                infos.add(new BatchInfo(volume(), anyLong(), f, f + rnd.nextInt(9), List.of(rnd.nextInt(64)),
                        anyLong(), rnd.nextInt(64), rnd.nextLong() & Long.MAX_VALUE, bytes(64)));
            }
            List<Message.CommitProof> proofs = new ArrayList<>();
            for (int i = rnd.nextInt(3); i > 0; i--) {
                proofs.add(commitProof());
            }
            return new Message.RecoveryState(anyLong(), volume(), rnd.nextInt(64), rnd.nextInt(9),
                    io.salus.core.crypto.NodeId.of("v/" + rnd.nextInt(64) + "/r" + rnd.nextInt(3)), anyLong(), pending,
                    infos, java.util.stream.LongStream.range(0, rnd.nextInt(4)).map(i -> anyLong()).boxed().toList(),
                    proofs, bytes(64));
        }

        BatchInfo batchInfo() {
            List<Integer> parts = new ArrayList<>();
            for (int i = rnd.nextInt(5); i > 0; i--) {
                parts.add(rnd.nextInt(64));
            }
            long f = rnd.nextInt(1000);
            return new BatchInfo(volume(), anyLong(), f, f + rnd.nextInt(9), parts, anyLong(), rnd.nextInt(64),
                    rnd.nextLong() & Long.MAX_VALUE, bytes(64));
        }

        /** A leader replica's TENTATIVE_COMMIT with a BatchInfo (review rv19-3; the wire does not check they match). */
        Message.CommitProof commitProof() {
            long f = rnd.nextInt(1000);
            return new Message.CommitProof(cert(CertType.TENTATIVE_COMMIT, new Statement.Decision(true, volume(),
                    anyLong(), f, f + rnd.nextInt(50), region(), rnd.nextInt(5))), rnd.nextBoolean() ? batchInfo() : null);
        }

        Message of(MessageCodec.Type t) {
            return switch (t) {
                case SUB_BATCH -> new Message.SubBatchMsg(subBatch());
                case BATCH_INFO -> {
                    List<Integer> parts = new ArrayList<>();
                    for (int i = rnd.nextInt(5); i > 0; i--) {
                        parts.add(rnd.nextInt(64));
                    }
                    long f = rnd.nextInt(1000);
                    yield new Message.BatchInfoMsg(new BatchInfo(volume(), anyLong(), f, f + rnd.nextInt(9), parts,
                            anyLong(), rnd.nextInt(64), rnd.nextLong() & Long.MAX_VALUE, bytes(64)));
                }
                case LOG_CERT -> new Message.LogCertMsg(logEntry());
                case STORE_ACK -> new Message.StoreAck(rnd.nextInt(64), rnd.nextInt(9), anyLong(), hash(), bytes(64));
                case CHAIN_ACK -> new Message.ChainAck(rnd.nextInt(64), rnd.nextInt(9), anyLong(), hash());
                case VOTE -> new Message.Vote(anyLong(), rnd.nextInt(64), rnd.nextInt(9), rnd.nextBoolean(), bytes(64));
                case DECISION_REQUEST -> new Message.DecisionRequest(rnd.nextInt(64), anyLong());
                case DECISION -> new Message.DecisionMsg(decision());
                case PUT_REPLY -> new Message.PutReply(putOutcome());
                case GET_REQUEST -> new Message.GetRequest(anyLong(), anyLong(), anyLong());
                case GET_REPLY -> {
                    List<Hash> sib = new ArrayList<>();
                    for (int i = rnd.nextInt(12); i > 0; i--) {
                        sib.add(hash());
                    }
                    long block = rnd.nextInt(1 << 20);
                    yield new Message.GetReply(anyLong(), block, bytes(128), anyLong(),
                            new MerkleProof(block, hash(), sib));
                }
                case CHECKPOINT_PROPOSE -> new Message.CheckpointPropose(rnd.nextInt(64), rnd.nextInt(9), anyLong());
                case CHECKPOINT_VOTE -> new Message.CheckpointVote(checkpoint());
                case CHECKPOINT_CERT -> new Message.CheckpointCert(checkpoint());
                case WRITER_FENCE -> new Message.WriterFence(cert(CertType.WRITER_EPOCH,
                        new Statement.WriterEpoch(volume(), rnd.nextLong() & Long.MAX_VALUE)));
                case WRITER_EPOCH_REPLY -> new Message.WriterEpochReply(volume(), rnd.nextInt(64), anyLong(),
                        rnd.nextLong() & Long.MAX_VALUE, rnd.nextLong() & Long.MAX_VALUE, bytes(64));
                case MOUNT_QUERY -> new Message.MountQuery(anyLong(), anyLong(), bytes(64));
                case MOUNT_STATE -> new Message.MountState(anyLong(), volume(), rnd.nextInt(64), rnd.nextInt(9), anyLong(),
                        anyLong(), anyLong(), anyLong(), anyLong(), anyLong(), hash(), hash(), anyLong(), bytes(64));
                case LEAF_QUERY -> new Message.LeafQuery(anyLong(), rnd.nextInt(64), rnd.nextInt(1 << 16),
                        (1 << 16) + rnd.nextInt(1 << 16));
                case LEAF_CHUNK -> {
                    java.util.TreeMap<Long, Hash> leaves = new java.util.TreeMap<>();
                    for (int i = rnd.nextInt(6); i > 0; i--) {
                        leaves.put(100L + rnd.nextInt(1 << 16), hash());
                    }
                    yield new Message.LeafChunk(anyLong(), volume(), rnd.nextInt(64), rnd.nextInt(9), hash(), 100,
                            100 + (1 << 16), leaves, bytes(64));
                }
                case STATE_REQUEST -> new Message.StateRequest(rnd.nextInt(64), rnd.nextInt(9), anyLong());
                case FLUSH_REQUEST -> new Message.FlushRequest(anyLong());
                case FLUSH_REPLY -> new Message.FlushReply(volume(), rnd.nextInt(64), rnd.nextInt(9), anyLong(), bytes(64));
                case STATE_TRANSFER -> {
                    List<Message.StateBlock> blocks = new ArrayList<>();
                    long k = -1;
                    for (int i = rnd.nextInt(4); i > 0; i--) {
                        k += 1 + rnd.nextInt(100);
                        blocks.add(new Message.StateBlock(k, bytes(64)));
                    }
                    List<byte[]> entries = new ArrayList<>();
                    for (int i = rnd.nextInt(3); i > 0; i--) {
                        entries.add(subBatch().encode());
                    }
                    List<Certificate> certs = new ArrayList<>();
                    for (int i = rnd.nextInt(3); i > 0; i--) {
                        certs.add(decision());
                    }
                    if (rnd.nextBoolean()) {
                        certs.add(cert(CertType.WRITER_EPOCH, new Statement.WriterEpoch(volume(),
                                rnd.nextLong() & Long.MAX_VALUE)));
                    }
                    java.util.TreeMap<Long, Hash> leaves = new java.util.TreeMap<>();
                    for (int i = rnd.nextInt(4); i > 0; i--) {
                        leaves.put((long) rnd.nextInt(1 << 16), hash());
                    }
                    yield new Message.StateTransfer(rnd.nextInt(64), rnd.nextInt(9), anyLong(), anyLong(), hash(),
                            anyLong(), blocks, entries, certs, leaves);
                }
                case REBUILD_REQUEST -> {
                    List<Long> blocks = new ArrayList<>();
                    for (int i = rnd.nextInt(5); i > 0; i--) {
                        blocks.add((long) rnd.nextInt(1 << 16));
                    }
                    yield new Message.RebuildRequest(rnd.nextInt(64), rnd.nextInt(9), anyLong(), blocks);
                }
                case REBUILD_BLOCKS -> {
                    List<Message.StateBlock> blocks = new ArrayList<>();
                    for (int i = rnd.nextInt(4); i > 0; i--) {
                        blocks.add(new Message.StateBlock(rnd.nextInt(1 << 16), bytes(64)));
                    }
                    yield new Message.RebuildBlocks(rnd.nextInt(64), rnd.nextInt(9), anyLong(), blocks);
                }
                case RECOVERY_STATE -> recoveryState();
                case RECOVERY_BATCH_INFO -> new Message.RecoveryBatchInfo(volume(), anyLong(), batchInfo(), bytes(64));
                case RECOVERY_ABORT -> {
                    List<Message.RecoveryState> proof = new ArrayList<>();
                    for (int i = rnd.nextInt(4); i > 0; i--) {
                        proof.add(recoveryState());
                    }
                    long f = rnd.nextInt(1000);
                    yield new Message.RecoveryAbort(volume(), anyLong(), anyLong(), rnd.nextInt(64), f,
                            f + rnd.nextInt(9), proof, bytes(64));
                }
            };
        }
    }

    /** Field-by-field equality through the record components (byte arrays by content). */
    static void assertSameValue(Object expected, Object actual, String path) {
        if (expected instanceof byte[] e) {
            assertTrue(actual instanceof byte[] a && Arrays.equals(e, a), path + " differs");
        } else if (expected instanceof List<?> e) {
            List<?> a = (List<?>) actual;
            assertEquals(e.size(), a.size(), path + " size");
            for (int i = 0; i < e.size(); i++) {
                assertSameValue(e.get(i), a.get(i), path + "[" + i + "]");
            }
        } else if (expected != null && expected.getClass().isRecord()) {
            assertEquals(expected.getClass(), actual.getClass(), path);
            for (RecordComponent c : expected.getClass().getRecordComponents()) {
                try {
                    assertSameValue(c.getAccessor().invoke(expected), c.getAccessor().invoke(actual),
                            path + "." + c.getName());
                } catch (ReflectiveOperationException x) {
                    throw new AssertionError(x);
                }
            }
        } else {
            assertEquals(expected, actual, path);
        }
    }

    @Test
    void everyMessageTypeHasAWireTypeWithADistinctCode() {
        Set<Class<?>> covered = new HashSet<>();
        Set<Integer> codes = new HashSet<>();
        for (MessageCodec.Type t : MessageCodec.Type.values()) {
            covered.add(t.messageClass());
            assertTrue(codes.add(t.code()), "code " + t.code() + " used twice");
        }
        for (Class<?> c : Message.class.getPermittedSubclasses()) {
            assertTrue(covered.contains(c), c.getSimpleName() + " has no MessageCodec.Type: it cannot be sent");
        }
    }

    @Test
    void everyMessageTypeRoundTrips() {
        Samples s = new Samples(11);
        Map<MessageCodec.Type, Integer> seen = new EnumMap<>(MessageCodec.Type.class);
        for (int i = 0; i < 200; i++) {
            for (MessageCodec.Type t : MessageCodec.Type.values()) {
                Message m = s.of(t);
                byte[] b = MessageCodec.encode(m);
                assertEquals(MessageCodec.VERSION, b[0]);
                assertEquals(t.code(), b[1]);
                Message back = MessageCodec.decode(b);
                assertSameValue(m, back, t.name());
                assertArrayEquals(b, MessageCodec.encode(back), t + " re-encodes to the same bytes");
                seen.merge(t, 1, Integer::sum);
            }
        }
        assertEquals(MessageCodec.Type.values().length, seen.size());
    }

    @Test
    void everyTruncationAndEveryTrailingByteIsRejectedWithAnOffsetInsideTheInput() {
        Samples s = new Samples(3);
        for (MessageCodec.Type t : MessageCodec.Type.values()) {
            byte[] b = MessageCodec.encode(s.of(t));
            for (int len = 0; len < b.length; len++) {
                byte[] cut = Arrays.copyOf(b, len);
                CertificateFormatException e = assertThrows(CertificateFormatException.class,
                        () -> MessageCodec.decode(cut), t + " cut to " + len);
                assertTrue(e.offset() >= 0 && e.offset() <= len, t + " cut to " + len + ": " + e.getMessage());
            }
            byte[] longer = Arrays.copyOf(b, b.length + 1);
            CertificateFormatException e = assertThrows(CertificateFormatException.class,
                    () -> MessageCodec.decode(longer));
            assertTrue(e.getMessage().contains("trailing"), e.getMessage());
            assertEquals(b.length, e.offset(), e.getMessage());
        }
    }

    @Test
    void unknownVersionAndTypeAreNamed() {
        byte[] b = MessageCodec.encode(new Message.DecisionRequest(2, 5));
        byte[] v3 = b.clone();
        v3[0] = 3;
        CertificateFormatException e = assertThrows(CertificateFormatException.class, () -> MessageCodec.decode(v3));
        assertTrue(e.getMessage().contains("version 3"), e.getMessage());
        assertEquals(0, e.offset());
        byte[] t99 = b.clone();
        t99[1] = 99;
        e = assertThrows(CertificateFormatException.class, () -> MessageCodec.decode(t99));
        assertTrue(e.getMessage().contains("unknown message type code 99"), e.getMessage());
        assertEquals(1, e.offset());
        assertThrows(CertificateFormatException.class, () -> MessageCodec.decode(null));
    }

    /** Type confusion: a decision certificate smuggled in as a PUT reply is refused at decoding. */
    @Test
    void aCertificateOfTheWrongKindForItsMessageIsRejected() {
        Samples s = new Samples(8);
        Certificate decision = s.decision();
        byte[] asDecision = MessageCodec.encode(new Message.DecisionMsg(decision));
        byte[] asReply = asDecision.clone();
        asReply[1] = (byte) MessageCodec.Type.PUT_REPLY.code();
        CertificateFormatException e = assertThrows(CertificateFormatException.class,
                () -> MessageCodec.decode(asReply));
        assertTrue(e.getMessage().contains("PUT_REPLY message carries"), e.getMessage());
        assertEquals(7, e.offset(), "offset of the nested certificate's type byte");
        assertThrows(IllegalArgumentException.class, () -> MessageCodec.encode(new Message.PutReply(decision)));
    }

    /**
     * Review rv19-3: a recovery state's commit proof carries a TENTATIVE_COMMIT only. An ABORT (or any other kind) in
     * its place is refused when encoding and when decoding, at the nested certificate's type byte.
     */
    @Test
    void aCommitProofCarriesOnlyACommitDecision() {
        Samples s = new Samples(12);
        Message.RecoveryState st = s.recoveryState();
        Message.CommitProof good = new Message.CommitProof(s.commitProof().tentative(), s.batchInfo());
        Certificate abort = s.cert(CertType.TENTATIVE_ABORT, new Statement.Decision(false, "v", 2, 2, 3, s.region(), 1));
        Message.RecoveryState withAbort = new Message.RecoveryState(st.nonce(), st.volume(), st.region(),
                st.generation(), st.replica(), st.fenceBelow(), List.of(), List.of(), List.of(2L),
                List.of(new Message.CommitProof(abort, good.info())), st.signature());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> MessageCodec.encode(withAbort));
        assertTrue(e.getMessage().contains("RECOVERY_STATE message carries"), e.getMessage());
        // the same bytes with the ABORT's type byte written over a genuine COMMIT's
        Message.RecoveryState withCommit = new Message.RecoveryState(st.nonce(), st.volume(), st.region(),
                st.generation(), st.replica(), st.fenceBelow(), List.of(), List.of(), List.of(2L),
                List.of(new Message.CommitProof(good.tentative(), good.info())), st.signature());
        byte[] b = MessageCodec.encode(withCommit);
        byte[] certBytes = good.tentative().encode();
        int at = indexOf(b, certBytes);
        assertTrue(at > 0);
        byte[] bad = b.clone();
        byte[] abortBytes = abort.encode();
        bad[at + 1] = abortBytes[1]; // the certificate type byte (after its version byte)
        CertificateFormatException x = assertThrows(CertificateFormatException.class, () -> MessageCodec.decode(bad));
        assertTrue(x.getMessage().contains("RECOVERY_STATE message carries") || x.getMessage().contains("certificate"),
                x.getMessage());
        assertSameValue(withCommit, MessageCodec.decode(b), "commit proof");
    }

    static int indexOf(byte[] hay, byte[] needle) {
        for (int i = 0; i + needle.length <= hay.length; i++) {
            if (Arrays.equals(hay, i, i + needle.length, needle, 0, needle.length)) {
                return i;
            }
        }
        return -1;
    }

    @Test
    void aVoteIsZeroOrOneNothingElse() {
        byte[] b = MessageCodec.encode(new Message.Vote(1, 2, 3, true, new byte[4]));
        int at = 2 + 8 + 4 + 8;
        assertEquals(1, b[at]);
        b[at] = 2;
        CertificateFormatException e = assertThrows(CertificateFormatException.class, () -> MessageCodec.decode(b));
        assertEquals(at, e.offset(), e.getMessage());
    }

    @Test
    void hugeCountsAndLengthsAreRejectedBeforeAllocating() {
        Samples s = new Samples(4);
        byte[] b = MessageCodec.encode(s.of(MessageCodec.Type.BATCH_INFO));
        Message.BatchInfoMsg m = (Message.BatchInfoMsg) MessageCodec.decode(b);
        int countAt = 2 + 1 + m.info().volume().getBytes(java.nio.charset.StandardCharsets.UTF_8).length + 24;
        for (int v : new int[] {Integer.MAX_VALUE, -1, 1 << 28}) {
            byte[] bad = b.clone();
            java.nio.ByteBuffer.wrap(bad).putInt(countAt, v);
            CertificateFormatException e = assertThrows(CertificateFormatException.class,
                    () -> MessageCodec.decode(bad));
            assertTrue(e.getMessage().contains("participant count " + v), e.getMessage());
            assertEquals(countAt, e.offset());
        }
        byte[] sb = MessageCodec.encode(s.of(MessageCodec.Type.SUB_BATCH));
        java.nio.ByteBuffer.wrap(sb).putInt(2, Integer.MAX_VALUE);
        CertificateFormatException e = assertThrows(CertificateFormatException.class, () -> MessageCodec.decode(sb));
        assertTrue(e.getMessage().contains("truncated"), e.getMessage());
        byte[] deep = MessageCodec.encode(s.of(MessageCodec.Type.GET_REPLY));
        Message.GetReply g = (Message.GetReply) MessageCodec.decode(deep);
        int levelsAt = 2 + 16 + 4 + g.data().length + 8 + 8 + 32;
        deep[levelsAt] = (byte) 65;
        e = assertThrows(CertificateFormatException.class, () -> MessageCodec.decode(deep));
        assertTrue(e.getMessage().contains("65 levels"), e.getMessage());
        assertEquals(levelsAt, e.offset());
    }

    @Test
    void errorsInsideANestedEntryNameTheOuterOffset() {
        Samples s = new Samples(5);
        Message.SubBatchMsg m = (Message.SubBatchMsg) s.of(MessageCodec.Type.SUB_BATCH);
        byte[] b = MessageCodec.encode(m);
        b[6] = 9; // the nested log entry's version byte (2 header + 4 length)
        CertificateFormatException e = assertThrows(CertificateFormatException.class, () -> MessageCodec.decode(b));
        assertTrue(e.getMessage().startsWith("sub-batch: unsupported log entry version 9"), e.getMessage());
        assertEquals(6, e.offset(), e.getMessage());
    }

    @Test
    void anUnsignedMessageCannotBeEncoded() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> MessageCodec.encode(new Message.Vote(1, 2, 3, true, null)));
        assertTrue(e.getMessage().contains("Vote.signature"), e.getMessage());
    }

    @Test
    void damagedMessagesAreRejectedOrCanonical() {
        Samples s = new Samples(21);
        List<byte[]> valid = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            for (MessageCodec.Type t : MessageCodec.Type.values()) {
                valid.add(MessageCodec.encode(s.of(t)));
            }
        }
        CanonicalFuzz.Outcome o = CanonicalFuzz.fuzz(valid, 77, 30_000, MessageCodec::decode, MessageCodec::encode);
        assertTrue(o.rejected() > 6_000 && o.decoded() > 1_500, o.toString());
    }

    /** Hostile: the sender's buffer is reused after decoding; the decoded message must not change. */
    @Test
    void aDecodedMessageDoesNotAliasItsInputBuffer() {
        Samples s = new Samples(9);
        for (MessageCodec.Type t : MessageCodec.Type.values()) {
            byte[] b = MessageCodec.encode(s.of(t));
            byte[] original = b.clone();
            Message m = MessageCodec.decode(b);
            Arrays.fill(b, (byte) 0x5a);
            assertArrayEquals(original, MessageCodec.encode(m), t + " changed when its input buffer was reused");
        }
    }

    /** Before: a bad put count was reported 4 bytes after the field. */
    @Test
    void aBadPutCountIsNamedWhereTheFieldStarts() {
        Samples s = new Samples(6);
        Message.SubBatchMsg m = (Message.SubBatchMsg) s.of(MessageCodec.Type.SUB_BATCH);
        byte[] entry = m.subBatch().encode();
        // version, volume (length + bytes), region, batch id, leader region, writer epoch
        int countAt = 1 + 1 + m.subBatch().volume().getBytes(java.nio.charset.StandardCharsets.UTF_8).length + 4 + 8 + 4
                + 8;
        java.nio.ByteBuffer.wrap(entry).putInt(countAt, 0);
        CertificateFormatException e = assertThrows(CertificateFormatException.class, () -> SubBatch.decode(entry));
        assertTrue(e.getMessage().contains("invalid put count 0"), e.getMessage());
        assertEquals(countAt, e.offset(), e.getMessage());
    }
}
