package io.salus.core.cert;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.SignatureScheme;
import io.salus.core.merkle.HashAlgorithm;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The holes a review of {@code io.salus.core.cert} found in encoding and decoding: each test failed on
 * the code before its fix. The rule kept now: the encoder writes only what the decoder accepts (no
 * silent u8/u16 wrap-around), readers cannot be pointed outside their array, and a rejected field is
 * named at the offset where it starts.
 */
class CertificateEncodingHolesTest {
    static final Statement.LogEntry ST = new Statement.LogEntry(new RegionId("vol1", 2), 1, 17,
            HashAlgorithm.SHA256.hash(new byte[5]), 4096);

    static List<Certificate.Sig> sigs(int n, int length) {
        List<Certificate.Sig> s = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            s.add(new Certificate.Sig(NodeId.of(String.format("rs%03d", i)), new byte[length]));
        }
        return s;
    }

    /** Before: a 260-byte weak signature was written with length byte 4 (260 mod 256). */
    @Test
    void aSignatureOfTheWrongLengthForItsSchemeIsNotEncoded() {
        for (int len : new int[] {5, 260}) {
            Certificate c = Certificate.of(CertType.TENTATIVE_LOG_ENTRY, SignatureScheme.WEAK_CRC32C, ST, sigs(1, len));
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, c::encode);
            assertTrue(e.getMessage().contains("rs000") && e.getMessage().contains(len + " bytes")
                    && e.getMessage().contains("4 bytes"), e.getMessage());
        }
    }

    /** Before: 256 signatures were written with count byte 0, and 2 on a tentative with count 2. */
    @Test
    void aSignatureCountTheTypeDoesNotAllowIsNotEncoded() {
        for (int n : new int[] {2, 256}) {
            Certificate c = Certificate.of(CertType.TENTATIVE_LOG_ENTRY, SignatureScheme.WEAK_CRC32C, ST, sigs(n, 4));
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, c::encode);
            assertTrue(e.getMessage().contains("TENTATIVE_LOG_ENTRY must carry 1 signature")
                    && e.getMessage().contains("has " + n), e.getMessage());
        }
        Certificate ok = Certificate.of(CertType.LOG_ENTRY, SignatureScheme.WEAK_CRC32C, ST, sigs(3, 4));
        assertEquals(ok, Certificate.decode(ok.encode()));
    }

    @Test
    void theWriterRefusesValuesItsFieldCannotHold() {
        Wire.Out o = new Wire.Out();
        assertThrows(IllegalArgumentException.class, () -> o.u8(256));
        assertThrows(IllegalArgumentException.class, () -> o.u8(-1));
        assertThrows(IllegalArgumentException.class, () -> o.u16(0x10000));
        assertThrows(IllegalArgumentException.class, () -> o.u16(-1));
        o.u8(255).u16(0xffff);
        assertArrayEquals(new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff}, o.toByteArray());
    }

    /** Before: a reader over a range outside its array failed later with ArrayIndexOutOfBoundsException. */
    @Test
    void aReaderCannotBeOpenedOutsideItsArray() {
        byte[] b = new byte[4];
        assertThrows(IndexOutOfBoundsException.class, () -> new Wire.In(b, 2, 8));
        assertThrows(IndexOutOfBoundsException.class, () -> new Wire.In(b, -1, 2));
        assertThrows(IndexOutOfBoundsException.class, () -> new Wire.In(b, 1, Integer.MAX_VALUE));
        Wire.In in = new Wire.In(b, 1, 3);
        assertThrows(CertificateFormatException.class, () -> in.i32("x"));
    }

    /** Before: a negative generation was reported at the offset after the field, not where it starts. */
    @Test
    void aNegativeFieldIsNamedWhereItStarts() {
        Certificate c = Certificate.of(CertType.TENTATIVE_LOG_ENTRY, SignatureScheme.WEAK_CRC32C, ST, sigs(1, 4));
        byte[] b = c.encode();
        // 5 header bytes (version, type, scheme, u16 statement length), region = str8 "vol1" + i32
        int generationAt = 5 + 1 + 4 + 4;
        assertEquals(1, b[generationAt + 7]);
        b[generationAt] = (byte) 0x80;
        CertificateFormatException e = assertThrows(CertificateFormatException.class, () -> Certificate.decode(b));
        assertTrue(e.getMessage().contains("generation must be >= 0"), e.getMessage());
        assertEquals(generationAt, e.offset(), e.getMessage());
        int lengthAt = generationAt + 8 + 8 + 32;
        byte[] b2 = c.encode();
        b2[lengthAt] = (byte) 0xff;
        e = assertThrows(CertificateFormatException.class, () -> Certificate.decode(b2));
        assertTrue(e.getMessage().contains("entry length must be >= 0"), e.getMessage());
        assertEquals(lengthAt, e.offset(), e.getMessage());
    }
}
