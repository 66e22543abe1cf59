package io.salus.core.cert;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.core.crypto.KeyDirectory;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.NodeKeys;
import io.salus.core.crypto.SignatureScheme;
import io.salus.core.merkle.HashAlgorithm;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class CertificateTest {
    static final RegionId R = new RegionId("vol1", 2);

    static List<NodeKeys> keys(SignatureScheme s) {
        List<NodeKeys> k = new ArrayList<>();
        for (String n : new String[] {"rs0", "rs1", "rs2"}) {
            k.add(NodeKeys.deterministic(s, NodeId.of(n), 1));
        }
        return k;
    }

    public static List<Statement> samples() {
        var h = HashAlgorithm.SHA256.hash(new byte[5]);
        return List.of(new Statement.LogEntry(R, 1, 17, h, 4096),
                new Statement.PutOutcome(true, R, 3, 10, 12, 17, h),
                new Statement.PutOutcome(false, R, 3, 10, 12, 17, h),
                new Statement.NoNextEntry(R, 1, 18),
                new Statement.Checkpoint(R, 1, 17, 12, h, HashAlgorithm.SHA256.hash(new byte[] {12})),
                new Statement.Decision(true, "vol1", 3, 10, 12, R, 1),
                new Statement.Decision(false, "vol1", 3, 10, 12, R, 1),
                new Statement.WriterEpoch("vol1", 4_294_967_301L));
    }

    public static CertType tentativeFor(Statement s) {
        return switch (s.kind()) {
            case LOG_ENTRY -> CertType.TENTATIVE_LOG_ENTRY;
            case PUT_SUCCESS -> CertType.TENTATIVE_PUT_SUCCESS;
            case PUT_FAILED -> CertType.TENTATIVE_PUT_FAILED;
            case NO_NEXT_ENTRY -> CertType.NO_NEXT_ENTRY;
            case CHECKPOINT -> CertType.TENTATIVE_CHECKPOINT;
            case COMMIT -> CertType.TENTATIVE_COMMIT;
            case ABORT -> CertType.TENTATIVE_ABORT;
            case WRITER_EPOCH -> CertType.WRITER_EPOCH;
        };
    }

    /**
     * The CHECKPOINT statement gained {@code volumeRoot} (review finding, issue 11); a CHECKPOINT
     * encoded before the change (no volume root) is refused with an error naming the missing field.
     */
    @Test
    void aCheckpointWithoutItsVolumeRootDoesNotDecode() {
        var h = HashAlgorithm.SHA256.hash(new byte[5]);
        Statement.Checkpoint st = new Statement.Checkpoint(R, 1, 17, 12, h, HashAlgorithm.SHA256.hash(new byte[] {1}));
        assertEquals(new io.salus.core.merkle.VolumeRootRecord(st.volumeRoot(), 12), st.rootRecord());
        byte[] b = Certificate.sign(CertType.TENTATIVE_CHECKPOINT, st, keys(SignatureScheme.WEAK_CRC32C).get(0).signer())
                .encode();
        int len = ((b[3] & 0xff) << 8) | (b[4] & 0xff);
        java.io.ByteArrayOutputStream old = new java.io.ByteArrayOutputStream();
        old.write(b, 0, 3);
        old.write((len - 32) >> 8);
        old.write((len - 32) & 0xff);
        old.write(b, 5, len - 32); // the statement as it was encoded before: no volume root
        old.write(b, 5 + len, b.length - 5 - len);
        CertificateFormatException e = assertThrows(CertificateFormatException.class,
                () -> Certificate.decode(old.toByteArray()));
        assertTrue(e.getMessage().contains("volume root"), e.getMessage());
    }

    @ParameterizedTest
    @EnumSource(SignatureScheme.class)
    void roundTripCombineVerify(SignatureScheme scheme) {
        List<NodeKeys> ks = keys(scheme);
        KeyDirectory dir = new KeyDirectory(scheme);
        ks.forEach(dir::register);
        Set<NodeId> rrs = Set.of(ks.get(0).id(), ks.get(1).id(), ks.get(2).id());
        for (Statement s : samples()) {
            List<Certificate> tent = new ArrayList<>();
            for (NodeKeys k : ks) {
                Certificate t = Certificate.sign(tentativeFor(s), s, k.signer());
                assertEquals(t, Certificate.decode(t.encode()));
                assertTrue(t.verify(dir));
                tent.add(t);
            }
            if (tentativeFor(s).combined() != null) {
                Certificate full = Certificate.combine(List.of(tent.get(2), tent.get(0), tent.get(1)));
                assertArrayEquals(full.encode(), Certificate.combine(tent).encode(), "encoding is deterministic");
                Certificate back = Certificate.decode(full.encode());
                assertEquals(full, back);
                assertTrue(back.verify(dir, rrs));
                assertFalse(back.verify(dir, Set.of(ks.get(0).id())));
                assertThrows(IllegalArgumentException.class, () -> Certificate.combine(tent.subList(0, 2)));
                assertThrows(IllegalArgumentException.class,
                        () -> Certificate.combine(List.of(tent.get(0), tent.get(0), tent.get(1))));
            }
        }
    }

    @Test
    void mismatchedTentativesDoNotCombine() {
        List<NodeKeys> ks = keys(SignatureScheme.WEAK_CRC32C);
        var h1 = HashAlgorithm.SHA256.hash(new byte[1]);
        var h2 = HashAlgorithm.SHA256.hash(new byte[2]);
        Certificate a = Certificate.sign(CertType.TENTATIVE_LOG_ENTRY, new Statement.LogEntry(R, 0, 1, h1, 1), ks.get(0).signer());
        Certificate b = Certificate.sign(CertType.TENTATIVE_LOG_ENTRY, new Statement.LogEntry(R, 0, 1, h2, 1), ks.get(1).signer());
        Certificate c = Certificate.sign(CertType.TENTATIVE_LOG_ENTRY, new Statement.LogEntry(R, 0, 1, h1, 1), ks.get(2).signer());
        assertThrows(IllegalArgumentException.class, () -> Certificate.combine(List.of(a, b, c)));
    }

    @Test
    void tamperedSignatureFailsVerification() {
        List<NodeKeys> ks = keys(SignatureScheme.HMAC_SHA256);
        KeyDirectory dir = new KeyDirectory(SignatureScheme.HMAC_SHA256);
        ks.forEach(dir::register);
        Certificate t = Certificate.sign(CertType.NO_NEXT_ENTRY, new Statement.NoNextEntry(R, 0, 5), ks.get(0).signer());
        byte[] enc = t.encode();
        enc[enc.length - 1] ^= 1;
        Certificate bad = Certificate.decode(enc);
        CertificateVerificationException e = assertThrows(CertificateVerificationException.class,
                () -> bad.verifyOrThrow(dir, null));
        assertTrue(e.getMessage().contains("bad signature of rs0"), e.getMessage());
    }

    @Test
    void everyTruncationAndTrailingByteIsRejectedPrecisely() {
        List<NodeKeys> ks = keys(SignatureScheme.ED25519);
        for (Statement s : samples()) {
            byte[] enc = Certificate.sign(tentativeFor(s), s, ks.get(0).signer()).encode();
            for (int len = 0; len < enc.length; len++) {
                byte[] cut = java.util.Arrays.copyOf(enc, len);
                CertificateFormatException e = assertThrows(CertificateFormatException.class,
                        () -> Certificate.decode(cut), "length " + len);
                assertTrue(e.getMessage().contains("truncated") || e.getMessage().contains("length"), e.getMessage());
            }
            byte[] longer = java.util.Arrays.copyOf(enc, enc.length + 1);
            assertTrue(assertThrows(CertificateFormatException.class, () -> Certificate.decode(longer))
                    .getMessage().contains("trailing"));
        }
        byte[] enc = Certificate.sign(CertType.NO_NEXT_ENTRY, new Statement.NoNextEntry(R, 0, 5), ks.get(0).signer()).encode();
        byte[] v2 = enc.clone();
        v2[0] = 2;
        assertTrue(assertThrows(CertificateFormatException.class, () -> Certificate.decode(v2)).getMessage()
                .contains("unsupported certificate encoding version 2"));
        byte[] t99 = enc.clone();
        t99[1] = 99;
        assertTrue(assertThrows(CertificateFormatException.class, () -> Certificate.decode(t99)).getMessage()
                .contains("unknown certificate type code 99"));
        byte[] sc = enc.clone();
        sc[2] = 9;
        assertThrows(CertificateFormatException.class, () -> Certificate.decode(sc));
        assertThrows(CertificateFormatException.class, () -> Certificate.decode(null));
    }
}
