package io.salus.core.hbase.endpoint;

import io.salus.core.crypto.NodeId;
import io.salus.core.protocol.ProtocolConfig;
import io.salus.core.protocol.recovery.Coordination;
import io.salus.core.protocol.recovery.InMemoryCoordination;
import io.salus.core.protocol.replica.RegionStore;
import io.salus.core.protocol.replica.InMemoryReplicaDisk;
import io.salus.core.protocol.replica.ReplicaDisk;
import io.salus.core.protocol.witness.CertificateStore;
import io.salus.core.protocol.witness.InMemoryCertificateStore;
import org.apache.hadoop.hbase.coprocessor.RegionCoprocessorEnvironment;

/**
 * Where a hosted replica keeps its Salus log, its region state and its checkpoint certificates, and a hosted
 * metadata store its certificates. {@link InMemory} keeps everything in the region server's memory: nothing
 * survives a region close (simulator-like runs only). The real storage is
 * {@code io.salus.core.hbase.storage.HdfsReplicaStorage} (the log on HDFS on the colocated DataNode, the region's
 * own cells, checkpoint certificates in ZooKeeper), the endpoint's default; chosen by class name ({@link #CLASS_KEY}).
 * One instance per replica region; {@link #close} when the region closes.
 */
public interface ReplicaStorageFactory {
    /** Configuration key: a class implementing this interface with a public no-argument constructor. */
    String CLASS_KEY = "salus.endpoint.storage.factory";

    ReplicaDisk disk(RegionCoprocessorEnvironment env, NodeId replica);

    CertificateStore certificateStore(RegionCoprocessorEnvironment env, NodeId holder);

    /**
     * The replica's region state. Called once the region is open (its cells readable). Null: an in-memory store
     * rebuilt from the checkpoint snapshot on the disk.
     */
    default RegionStore regionStore(RegionCoprocessorEnvironment env, ProtocolConfig cfg, int regionIndex) {
        return null;
    }

    /** Where the volume's CHECKPOINT certificates are filed (they must outlive the region, or a restart cannot verify its base). */
    default Coordination coordination(RegionCoprocessorEnvironment env, String volume) {
        return new InMemoryCoordination();
    }

    /**
     * If {@code error}, thrown while the replica read its disk ({@link #disk}) at open, proves the disk damaged, moves
     * the disk aside (never deleting it), so the same disk object starts over empty and the replica catches up from
     * a peer (issue 14), and returns where it went. Null: not damage, or this storage cannot (the replica then
     * refuses to start, as before).
     */
    default String quarantineDisk(RegionCoprocessorEnvironment env, RuntimeException error) {
        return null;
    }

    /**
     * The replica's disk failed while its region is open (a log append or commit mark could not be made durable, e.g.
     * its DataNode's disk was lost): the replica logs and commits nothing more until its region reopens. Called once,
     * off the replica's event loop. The storage may have the region reopened elsewhere (its open is the replica's
     * recovery: a disk that cannot be read is moved aside and the replica catches up from a peer). Default: nothing
     * (the region stays open without a working replica until someone reopens it).
     */
    default void diskFailed(RegionCoprocessorEnvironment env, RuntimeException error) {
    }

    /**
     * Whether this storage asked for the region to be reopened (a damaged read or a failed disk write, {@link
     * #diskFailed}): a replica whose start failed then waits for that reopen instead of starting again in place.
     */
    default boolean reopenAsked() {
        return false;
    }

    /** Releases what this factory opened (log files, ZooKeeper session). */
    default void close() {
    }

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
