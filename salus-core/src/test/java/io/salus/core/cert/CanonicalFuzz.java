package io.salus.core.cert;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.function.Function;

/**
 * The fuzz property every canonical decoder here keeps. A damaged input is either rejected with a
 * {@link CertificateFormatException} whose offset lies inside the input, or it decodes to a value whose
 * canonical encoding is exactly the damaged input (one value, one byte string). Any other exception,
 * an offset outside the input, or a decoded value that re-encodes differently fails the caller's test.
 */
public final class CanonicalFuzz {
    private CanonicalFuzz() {
    }

    /** The outcome counts of one fuzz run. */
    public record Outcome(int decoded, int rejected) {
    }

    /**
     * Mutates {@code valid} inputs {@code rounds} times (byte replacement, truncation, extension) and
     * checks the canonical-or-rejected property with {@code decode} / {@code encode}.
     */
    public static <T> Outcome fuzz(List<byte[]> valid, long seed, int rounds, Function<byte[], T> decode,
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

    public static byte[] mutate(byte[] valid, Random rnd) {
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
}
