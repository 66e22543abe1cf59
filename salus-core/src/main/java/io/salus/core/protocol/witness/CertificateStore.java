package io.salus.core.protocol.witness;

import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import java.util.Optional;

/**
 * Durable storage of combined LOG_ENTRY certificates, keyed by (region, generation, index). The HDFS
 * witness store (DataNode plugin / standalone witness) implements this over its disk; the
 * simulator uses {@link InMemoryCertificateStore}.
 */
public interface CertificateStore {
    Optional<Certificate> get(RegionId region, long generation, long index);

    /** Stores the certificate durably (put-if-absent; a later different certificate is ignored). */
    void putIfAbsent(RegionId region, long generation, long index, Certificate logEntry);

    /** Drops certificates with index &lt;= {@code throughIndex} (after a checkpoint certificate). */
    void truncatePrefix(RegionId region, long generation, long throughIndex);
}
