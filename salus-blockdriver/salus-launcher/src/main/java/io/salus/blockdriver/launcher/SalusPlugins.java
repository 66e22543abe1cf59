package io.salus.blockdriver.launcher;

import io.salus.core.hbase.SalusPlacementObserver;
import io.salus.core.crypto.SignatureScheme;
import io.salus.core.hbase.endpoint.EndpointKeyring;
import io.salus.core.hbase.storage.HdfsReplicaStorage;
import io.salus.hdfs.placement.LocationHintPlacementPolicy;
import io.salus.hdfs.witness.WitnessDataNodePlugin;
import io.salus.core.hbase.endpoint.WitnessHolders;
import io.salus.hdfs.witness.WitnessClientConnector;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;

/**
 * The Salus plugins the embedded cluster loads into stock HDFS and HBase, in one place so that
 * the README's configuration reference and the launcher cannot drift apart.
 */
final class SalusPlugins {
  private SalusPlugins() {}

  /**
   * HDFS side (salus-hdfs): the location-hint placement policy on the NameNode, and a witness
   * certificate store inside every DataNode. Each DataNode's witness keeps its journal next to
   * that DataNode's data directories, listens on an ephemeral loopback port and trusts the
   * replicas named in {@code trustFile} ({@link LauncherTrust}).
   */
  static void configureHdfs(Configuration conf, java.nio.file.Path trustFile) {
    conf.set(WitnessDataNodePlugin.TRUST_FILE_KEY, trustFile.toString());
    conf.set("dfs.block.replicator.classname", LocationHintPlacementPolicy.class.getName());
    conf.set("dfs.datanode.plugins", WitnessDataNodePlugin.class.getName());
    conf.setInt(WitnessDataNodePlugin.PORT_KEY, 0);
    conf.set(WitnessDataNodePlugin.BIND_HOST_KEY, "127.0.0.1");
    // Issue 27 (review rvw27-2): a stored checkpoint's blocks are the region's HFiles, which HBase closes without an
    // hsync; the DataNodes fsync every block file at its close, so a certified checkpoint (and the log collected to
    // it) survives a power loss, not only a crash of the process
    conf.setBoolean("dfs.datanode.synconclose", true);
  }

  /**
   * HBase side (salus-core's HBase adapters), the keys an operator sets in {@code hbase-site.xml} (see
   * docs/salus-on-hbase.md, "Enabling Salus on an existing HBase 2.6 cluster"):
   *
   * <ul>
   *   <li>the master coprocessor {@code SalusPlacementObserver} (keeps the three replicas of every RRS on three
   *       distinct region servers; the one cluster-wide coprocessor key);
   *   <li>the replica endpoints' keyring: the servers' keyring file {@code salus.endpoint.keyring.file}
   *       ({@link LauncherKeyring}; a data directory made before it keeps its test seed), signature schemes
   *       Ed25519 for the client and HMAC-SHA256 for the servers (the defaults, written out so that the file says
   *       them);
   *   <li>where a replica keeps its Salus log (HDFS, {@code salus.log.root}) and its checkpoint certificates
   *       (ZooKeeper, {@code salus.zk.root}), both at their defaults, written out.
   * </ul>
   *
   * The region endpoints themselves are table attributes of each Salus volume, nothing cluster-wide. Each region
   * server's own {@code salus.favored.datanode} is set per server ({@link PairedRegionServer}).
   */
  static void configureHBase(Configuration conf, LauncherKeyring keyring) {
    conf.set("hbase.coprocessor.master.classes", SalusPlacementObserver.class.getName());
    conf.setLong(SalusPlacementObserver.PERIOD_KEY, PLACEMENT_CHECK_MS);
    keyring.configureServers(conf);
    conf.set(EndpointKeyring.SCHEME_KEY, SignatureScheme.DEFAULT_CLIENT.name());
    conf.set(EndpointKeyring.SERVER_SCHEME_KEY, SignatureScheme.DEFAULT_SERVER.name());
    conf.set(HdfsReplicaStorage.LOG_ROOT_KEY, HdfsReplicaStorage.DEFAULT_LOG_ROOT);
    conf.set(HdfsReplicaStorage.ZK_ROOT_KEY, HdfsReplicaStorage.DEFAULT_ZK_ROOT);
  }

  /**
   * What a client needs beside the cluster's addresses to mount a Salus volume: the client's keyring file (its
   * signing key, the servers' secret to check their replies) and the schemes.
   */
  static void configureClient(Configuration conf, LauncherKeyring keyring) {
    keyring.configureClient(conf);
    conf.set(EndpointKeyring.SCHEME_KEY, SignatureScheme.DEFAULT_CLIENT.name());
    conf.set(EndpointKeyring.SERVER_SCHEME_KEY, SignatureScheme.DEFAULT_SERVER.name());
  }

  /**
   * The five metadata holders of every RRS are the real witness stores (issue 13 item 3): the witness plugin of the
   * DataNode paired with each replica's region server, and the two standalone witnesses.
   *
   * @param standalone the standalone witnesses, {@code host:port} each
   * @param paired     per region server port, its paired DataNode's witness plugin ({@code host:port})
   */
  static void configureWitnesses(Configuration conf, List<String> standalone, Map<Integer, String> paired) {
    conf.set(WitnessHolders.CONNECTOR_KEY, WitnessClientConnector.class.getName());
    conf.set(WitnessHolders.STANDALONE_KEY, String.join(",", standalone));
    StringBuilder p = new StringBuilder();
    paired.forEach((rsPort, witness) -> p.append(p.length() == 0 ? "" : ",").append("*:").append(rsPort)
        .append('=').append(witness));
    conf.set(WitnessHolders.PAIRED_KEY, p.toString());
  }

  /** Placement check period of the embedded cluster (the observer's default is 10 s; one JVM can afford 2 s). */
  static final long PLACEMENT_CHECK_MS = 2000;
}
