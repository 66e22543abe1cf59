package io.salus.core.protocol.witness;

import io.salus.core.cert.Certificate;
import io.salus.core.cert.RegionId;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

/** A {@link CertificateStore} in memory. */
public final class InMemoryCertificateStore implements CertificateStore {
    private record Key(RegionId region, long generation, long index) {
    }

    private final Map<Key, Certificate> certs = new HashMap<>();

    @Override
    public Optional<Certificate> get(RegionId region, long generation, long index) {
        return Optional.ofNullable(certs.get(new Key(region, generation, index)));
    }

    @Override
    public void putIfAbsent(RegionId region, long generation, long index, Certificate logEntry) {
        certs.putIfAbsent(new Key(region, generation, index), logEntry);
    }

    @Override
    public void truncatePrefix(RegionId region, long generation, long throughIndex) {
        certs.keySet().removeIf(k -> k.region.equals(region) && k.generation == generation && k.index <= throughIndex);
    }

    /** Removes everything (simulated disk loss). */
    public void clear() {
        certs.clear();
    }

    public int size() {
        return certs.size();
    }

    /** Direct access for fault injection in tests. */
    public void replace(RegionId region, long generation, long index, Certificate c) {
        certs.put(new Key(region, generation, index), c);
    }
}
