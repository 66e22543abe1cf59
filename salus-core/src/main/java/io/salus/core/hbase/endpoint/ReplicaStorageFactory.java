package io.salus.core.hbase.endpoint;

import io.salus.core.crypto.NodeId;
import io.salus.core.protocol.replica.InMemoryReplicaDisk;
import io.salus.core.protocol.replica.ReplicaDisk;
import io.salus.core.protocol.witness.CertificateStore;
import io.salus.core.protocol.witness.InMemoryCertificateStore;
import org.apache.hadoop.hbase.coprocessor.RegionCoprocessorEnvironment;

/**
 * Where a hosted replica keeps its Salus log and a hosted metadata store its certificates. The default
 * ({@link InMemory}) keeps both in the region server's memory: nothing survives a region close. The HDFS-backed
 * log ({@code io.salus.core.hbase.storage}) plugs in here by class name ({@link #CLASS_KEY}).
 */
public interface ReplicaStorageFactory {
    /** Configuration key: a class implementing this interface with a public no-argument constructor. */
    String CLASS_KEY = "salus.endpoint.storage.factory";

    ReplicaDisk disk(RegionCoprocessorEnvironment env, NodeId replica);

    CertificateStore certificateStore(RegionCoprocessorEnvironment env, NodeId holder);

    /** In memory only (the interim default; the region's Salus log is lost when the region closes). */
    final class InMemory implements ReplicaStorageFactory {
        @Override
        public ReplicaDisk disk(RegionCoprocessorEnvironment env, NodeId replica) {
            return new InMemoryReplicaDisk();
        }

        @Override
        public CertificateStore certificateStore(RegionCoprocessorEnvironment env, NodeId holder) {
            return new InMemoryCertificateStore();
        }
    }
}
