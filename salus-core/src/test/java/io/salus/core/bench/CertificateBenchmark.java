package io.salus.core.bench;

import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import io.salus.core.cert.Statement;
import io.salus.core.crypto.KeyDirectory;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.NodeKeys;
import io.salus.core.crypto.SignatureScheme;
import io.salus.core.crypto.Signer;
import io.salus.core.merkle.HashAlgorithm;
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
 * Cost of the three signature schemes on Salus certificates (JMH; not a test). Run through
 * {@link CertificateBenchmarkMain}, which also records certificate sizes and writes CSV + PNG.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class CertificateBenchmark {
    @Param({"WEAK_CRC32C", "HMAC_SHA256", "ED25519"})
    public String scheme;

    Signer signer;
    KeyDirectory dir;
    Statement.LogEntry statement;
    Certificate tentative;
    Certificate logEntry;
    byte[] logEntryBytes;

    /** Builds the statement, keys of an RRS, and certificates used by the benchmarks and the size table. */
    @Setup
    public void setup() {
        SignatureScheme s = SignatureScheme.valueOf(scheme);
        dir = new KeyDirectory(s);
        List<Certificate> tents = new ArrayList<>();
        statement = sampleStatement();
        for (int i = 0; i < 3; i++) {
            NodeKeys k = NodeKeys.deterministic(s, NodeId.of("rs-" + i), 7);
            dir.register(k);
            if (i == 0) {
                signer = k.signer();
            }
            tents.add(Certificate.sign(CertType.TENTATIVE_LOG_ENTRY, statement, k.signer()));
        }
        tentative = tents.get(0);
        logEntry = Certificate.combine(tents);
        logEntryBytes = logEntry.encode();
    }

    static Statement.LogEntry sampleStatement() {
        return new Statement.LogEntry(new RegionId("volume-0001", 17), 3, 123_456,
                HashAlgorithm.SHA256.hash(new byte[4096]), 1_048_576);
    }

    /** Sign one TENTATIVE_LOG_ENTRY (what every replica does per sub-batch). */
    @Benchmark
    public Certificate signTentative() {
        return Certificate.sign(CertType.TENTATIVE_LOG_ENTRY, statement, signer);
    }

    /** Verify one tentative (what each of the 5 stores does per replica). */
    @Benchmark
    public boolean verifyTentative() {
        return tentative.verify(dir);
    }

    /** Decode and verify a combined LOG_ENTRY with three signatures (recovery). */
    @Benchmark
    public boolean decodeVerifyLogEntry() {
        return Certificate.decode(logEntryBytes).verify(dir);
    }
}
