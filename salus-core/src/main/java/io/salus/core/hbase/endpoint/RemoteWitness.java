package io.salus.core.hbase.endpoint;

import java.io.Closeable;
import java.io.IOException;
import java.net.InetSocketAddress;

/**
 * The seam between the replica endpoint and a real witness store (a DataNode's witness plugin or a standalone
 * witness daemon). salus-core defines it; salus-hdfs implements it over its witness wire protocol
 * ({@code io.salus.hdfs.witness.WitnessClientConnector}), loaded by class name from
 * {@link WitnessHolders#CONNECTOR_KEY}, so salus-core never depends on salus-hdfs. One instance is one connection,
 * used by one thread at a time.
 */
public interface RemoteWitness extends Closeable {
    /** The witness's signing identity (its scheme name and verification key). */
    record Identity(String nodeId, String scheme, byte[] verificationKey) {
    }

    /**
     * Offers an encoded TENTATIVE_LOG_ENTRY certificate.
     *
     * @return the witness's own signature over {@code Message.StoreAck.signedBytes} of the slot if the witness
     *         stores the LOG_ENTRY durably (STORED), or null while it waits for the other replicas' tentatives
     * @throws IOException unreachable, refused (the message says why) or a protocol error
     */
    byte[] offer(byte[] certificate) throws IOException;

    Identity identity() throws IOException;

    /**
     * Reads, without sealing the slot, the encoded certificate the witness stores for (volume, region, generation,
     * index) (the wire protocol's unsigned read-only QUERY; verify before use).
     *
     * @return the encoded certificate, or null if the witness stores none there
     * @throws IOException unreachable, refused or a protocol error
     */
    byte[] read(String volume, int region, long generation, long index) throws IOException;

    /**
     * Asks the witness to drop its LOG_ENTRY certificates covered by an encoded CHECKPOINT certificate; the witness
     * verifies it first (three signatures of the region's replicas in its generation) and drops nothing otherwise.
     *
     * @return true if the witness verified it and truncated, false if it refused it (the connection stays usable)
     * @throws IOException unreachable or a protocol error
     */
    boolean truncate(byte[] checkpoint) throws IOException;

    /** Opens connections; needs a public no-argument constructor. */
    interface Connector {
        RemoteWitness connect(InetSocketAddress address, int timeoutMillis) throws IOException;
    }
}
