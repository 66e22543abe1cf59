package io.salus.core.cert;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.NodeKeys;
import io.salus.core.crypto.SignatureScheme;
import io.salus.core.merkle.HashAlgorithm;
import io.salus.core.protocol.message.Put;
import io.salus.core.protocol.message.SubBatch;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * Random damage to valid encodings. Every outcome is checked: a damaged input is either rejected with
 * a {@link CertificateFormatException} whose offset lies inside the input, or it decodes to a value
 * whose canonical encoding is exactly the damaged input (the encoding is canonical: one value, one
 * byte string). Any other exception, an offset outside the input, or a decoded value that re-encodes
 * differently fails the test.
 */
class DecodeFuzzTest {

    /** The outcome counts of one fuzz run. */
    record Outcome(int decoded, int rejected) {
    }

    /**
     * Mutates {@code valid} inputs {@code rounds} times (byte replacement, truncation, extension) and
     * checks the canonical-or-rejected property with {@code decode} / {@code encode}.
     */
    static <T> Outcome fuzz(List<byte[]> valid, long seed, int rounds, Function<byte[], T> decode,
                            Function<T, byte[]> encode) {
        Random rnd = new Random(seed);
        for (byte[] v : valid) {
            assertArrayEquals(v, encode.apply(decode.apply(v)), "valid input must round-trip byte for byte");
        }
        int ok = 0;
        int rejected = 0;
        for (int i = 0; i < rounds; i++) {
            byte[] b = mutate(valid.get(rnd.nextInt(valid.size())), rnd);
            T value;
            try {
                value = decode.apply(b);
            } catch (CertificateFormatException e) {
                assertTrue(e.offset() >= 0 && e.offset() <= b.length, "offset " + e.offset()
                        + " outside an input of " + b.length + " bytes: " + e.getMessage());
                assertTrue(e.getMessage().contains("offset " + e.offset()), e.getMessage());
                rejected++;
                continue;
            } catch (RuntimeException e) {
                throw new AssertionError("decoding " + HexFormat.of().formatHex(b) + " threw " + e
                        + " instead of CertificateFormatException", e);
            }
            byte[] again = encode.apply(value);
            if (!Arrays.equals(b, again)) {
                fail("non-canonical: input " + HexFormat.of().formatHex(b) + " decoded to " + value
                        + " which encodes as " + HexFormat.of().formatHex(again));
            }
            ok++;
        }
        return new Outcome(ok, rejected);
    }

    static byte[] mutate(byte[] valid, Random rnd) {
        byte[] b = valid.clone();
        switch (rnd.nextInt(4)) {
            case 0 -> b = Arrays.copyOf(b, rnd.nextInt(b.length)); // truncate
            case 1 -> { // extend with garbage
                b = Arrays.copyOf(b, b.length + 1 + rnd.nextInt(8));
                for (int i = valid.length; i < b.length; i++) {
                    b[i] = (byte) rnd.nextInt(256);
                }
            }
            default -> { // replace 1..4 bytes
                int flips = 1 + rnd.nextInt(4);
                for (int f = 0; f < flips && b.length > 0; f++) {
                    b[rnd.nextInt(b.length)] = (byte) rnd.nextInt(256);
                }
            }
        }
        return b;
    }

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
        Outcome o = fuzz(validCertificates(), 99, 60_000, Certificate::decode, Certificate::encode);
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
        Outcome o = fuzz(List.of(valid), 5, 30_000, SubBatch::decode, SubBatch::encode);
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
