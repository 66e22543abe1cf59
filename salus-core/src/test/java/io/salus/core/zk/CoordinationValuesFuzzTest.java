package io.salus.core.zk;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.salus.core.cert.CanonicalFuzz;
import io.salus.core.cert.CertificateFormatException;
import io.salus.core.merkle.HashAlgorithm;
import io.salus.core.protocol.recovery.Coordination.Lcp;
import io.salus.core.protocol.recovery.Coordination.RegionReport;
import java.util.List;
import java.util.TreeSet;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * The report and LCP values {@link CuratorCoordination} keeps in znodes are canonical: damaged bytes
 * are refused (as a {@link CoordinationStoreException} caused by a {@link CertificateFormatException}
 * naming the offset) or decode to a value that re-encodes to exactly those bytes.
 */
class CoordinationValuesFuzzTest {

    private static <T> Function<byte[], T> unwrapping(Function<byte[], T> decode) {
        return b -> {
            try {
                return decode.apply(b);
            } catch (CoordinationStoreException e) {
                assertTrue(e.getMessage().startsWith("/p does not hold"), e.getMessage());
                throw (CertificateFormatException) e.getCause();
            }
        };
    }

    @Test
    void damagedReportsAreRejectedOrCanonical() {
        List<byte[]> valid = List.of(
                CuratorCoordination.encodeReport(new RegionReport(3, new TreeSet<>(List.of(5L, 7L, 9L)))),
                CuratorCoordination.encodeReport(new RegionReport(0, new TreeSet<>())),
                CuratorCoordination.encodeReport(new RegionReport(Long.MAX_VALUE, new TreeSet<>(List.of(-1L)))));
        CanonicalFuzz.Outcome o = CanonicalFuzz.fuzz(valid, 13, 10_000,
                unwrapping(b -> CuratorCoordination.decodeReport("/p", b)), CuratorCoordination::encodeReport);
        assertTrue(o.rejected() > 1_000 && o.decoded() > 500, o.toString());
    }

    @Test
    void damagedLcpsAreRejectedOrCanonical() {
        long epoch = 4;
        List<byte[]> valid = List.of(CuratorCoordination.encodeLcp(
                new Lcp(epoch, 1234, HashAlgorithm.SHA256.hash(new byte[] {1}))));
        CanonicalFuzz.Outcome o = CanonicalFuzz.fuzz(valid, 17, 10_000,
                unwrapping(b -> CuratorCoordination.decodeLcp("/p", b, epoch)), CuratorCoordination::encodeLcp);
        assertTrue(o.rejected() > 1_000 && o.decoded() > 500, o.toString());
    }
}
