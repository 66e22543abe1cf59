package io.salus.hdfs.witness;

import io.salus.core.hbase.endpoint.RemoteWitness;
import java.io.IOException;
import java.net.InetSocketAddress;

/**
 * salus-hdfs's implementation of the replica endpoint's {@link RemoteWitness} seam over the witness wire
 * protocol ({@link WitnessClient}, v3: STORED replies carry the witness-signed store ack). Set
 * {@code salus.endpoint.witness.connector=io.salus.hdfs.witness.WitnessClientConnector} on the region servers.
 */
public final class WitnessClientConnector implements RemoteWitness.Connector {
  @Override
  public RemoteWitness connect(InetSocketAddress address, int timeoutMillis) throws IOException {
    WitnessClient c = new WitnessClient(address, timeoutMillis);
    return new RemoteWitness() {
      @Override
      public byte[] offer(byte[] certificate) throws IOException {
        WitnessClient.OfferReply r = c.offerForAck(certificate);
        return r.result() == WitnessClient.OfferResult.STORED ? r.storeAckSignature() : null;
      }

      @Override
      public boolean truncate(byte[] checkpoint) throws IOException {
        try {
          c.truncate(io.salus.core.cert.Certificate.decode(checkpoint));
          return true;
        } catch (WitnessClient.WitnessException e) {
          return false; // refused (the certificate did not verify there); the connection is fine
        }
      }

      @Override
      public byte[] read(String volume, int region, long generation, long index) throws IOException {
        io.salus.core.cert.Certificate stored =
            c.query(new io.salus.core.cert.RegionId(volume, region), generation, index);
        return stored == null ? null : stored.encode();
      }

      @Override
      public Identity identity() throws IOException {
        WitnessClient.Identity id = c.identity();
        return new Identity(id.id().name(), id.scheme().name(), id.verificationKey());
      }

      @Override
      public void close() throws IOException {
        c.close();
      }
    };
  }
}
