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
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Random damage to valid encodings: decoding either succeeds or throws CertificateFormatException, nothing else. */
class DecodeFuzzTest {
    @Test
    void damagedCertificatesFailOnlyWithFormatException() {
        Random rnd = new Random(99);
        List<byte[]> valid = new ArrayList<>();
        for (SignatureScheme s : SignatureScheme.values()) {
            var k = NodeKeys.deterministic(s, NodeId.of("n" + s.ordinal()), 1);
            for (Statement st : CertificateTest.samples()) {
                valid.add(Certificate.sign(CertificateTest.tentativeFor(st), st, k.signer()).encode());
            }
        }
        int ok = 0;
        int rejected = 0;
        for (int i = 0; i < 60_000; i++) {
            byte[] b = valid.get(rnd.nextInt(valid.size())).clone();
            int flips = 1 + rnd.nextInt(4);
            for (int f = 0; f < flips; f++) {
                b[rnd.nextInt(b.length)] = (byte) rnd.nextInt(256);
            }
            try {
                Certificate c = Certificate.decode(b);
                assertEquals(c, Certificate.decode(c.encode()), "re-encoding a decoded certificate is stable");
                ok++;
            } catch (CertificateFormatException e) {
                assertTrue(e.getMessage().contains("offset"), e.getMessage());
                rejected++;
            }
        }
        assertTrue(rejected > 10_000 && ok > 1_000, "ok=" + ok + " rejected=" + rejected);
    }

    @Test
    void damagedLogEntriesFailOnlyWithFormatException() {
        Random rnd = new Random(5);
        byte[] d = new byte[32];
        var h = HashAlgorithm.SHA256.hash(d);
        byte[] valid = new SubBatch("v", 1, 7, 0, List.of(new Put(5, 3, 9, d, h, h), new Put(6, 5, 10, d, h, h)),
                new byte[4]).encode();
        for (int i = 0; i < 30_000; i++) {
            byte[] b = rnd.nextBoolean() ? valid.clone() : java.util.Arrays.copyOf(valid, rnd.nextInt(valid.length));
            if (b.length > 0) {
                b[rnd.nextInt(b.length)] = (byte) rnd.nextInt(256);
            }
            try {
                SubBatch.decode(b);
            } catch (CertificateFormatException e) {
                // expected for most damage
            }
        }
    }
}
