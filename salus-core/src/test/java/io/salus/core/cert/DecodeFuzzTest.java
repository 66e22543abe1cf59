package io.salus.core.cert;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.NodeKeys;
import io.salus.core.crypto.SignatureScheme;
import io.salus.core.merkle.HashAlgorithm;
import io.salus.core.protocol.message.Put;
import io.salus.core.protocol.message.SubBatch;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Random damage to valid certificate and log-entry encodings, checked by {@link CanonicalFuzz}. */
class DecodeFuzzTest {

    static List<byte[]> validCertificates() {
        List<byte[]> valid = new ArrayList<>();
        for (SignatureScheme s : SignatureScheme.values()) {
            var k = NodeKeys.deterministic(s, NodeId.of("n" + s.ordinal()), 1);
            for (Statement st : CertificateTest.samples()) {
                valid.add(Certificate.sign(CertificateTest.tentativeFor(st), st, k.signer()).encode());
            }
        }
        return valid;
    }

    @Test
    void damagedCertificatesAreRejectedOrCanonical() {
        CanonicalFuzz.Outcome o = CanonicalFuzz.fuzz(validCertificates(), 99, 60_000, Certificate::decode,
                Certificate::encode);
        // Most damage is caught; byte replacements inside hashes and signatures decode (the signature
        // check, not the format, catches those), so both outcomes must occur.
        assertTrue(o.rejected() > 10_000 && o.decoded() > 1_000, o.toString());
    }

    @Test
    void damagedLogEntriesAreRejectedOrCanonical() {
        byte[] d = new byte[32];
        var h = HashAlgorithm.SHA256.hash(d);
        byte[] valid = new SubBatch("v", 1, 7, 0, List.of(new Put(5, 3, 9, d, h, h), new Put(6, 5, 10, d, h, h)),
                new byte[4]).encode();
        CanonicalFuzz.Outcome o = CanonicalFuzz.fuzz(List.of(valid), 5, 30_000, SubBatch::decode, SubBatch::encode);
        assertTrue(o.rejected() > 5_000 && o.decoded() > 1_000, o.toString());
    }

    /** The regression the canonical check found: a non-UTF-8 signer id used to decode to U+FFFD. */
    @Test
    void malformedUtf8IsRejectedNotReplaced() {
        var k = NodeKeys.deterministic(SignatureScheme.WEAK_CRC32C, NodeId.of("n0"), 1);
        Statement st = CertificateTest.samples().get(0);
        byte[] b = Certificate.sign(CertificateTest.tentativeFor(st), st, k.signer()).encode();
        int id = indexOf(b, "n0".getBytes());
        b[id + 1] = (byte) 0xC3; // a UTF-8 lead byte with no continuation byte
        CertificateFormatException e = org.junit.jupiter.api.Assertions.assertThrows(
                CertificateFormatException.class, () -> Certificate.decode(b));
        assertTrue(e.getMessage().contains("UTF-8"), e.getMessage());
        assertEquals(id, e.offset(), e.getMessage());
    }

    static int indexOf(byte[] hay, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= hay.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (hay[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return i;
        }
        throw new AssertionError("not found");
    }
}
