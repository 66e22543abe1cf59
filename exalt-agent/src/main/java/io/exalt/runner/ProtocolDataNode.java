package io.exalt.runner;

import java.io.IOException;
import java.util.List;
import org.apache.hadoop.hdfs.protocol.Block;
import org.apache.hadoop.hdfs.protocol.BlockListAsLongs;
import org.apache.hadoop.hdfs.protocol.DatanodeID;
import org.apache.hadoop.hdfs.security.token.block.ExportedBlockKeys;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.hdfs.server.datanode.DataStorage;
import org.apache.hadoop.hdfs.server.namenode.NameNode;
import org.apache.hadoop.hdfs.server.protocol.BlockReportContext;
import org.apache.hadoop.hdfs.server.protocol.DatanodeProtocol;
import org.apache.hadoop.hdfs.server.protocol.DatanodeRegistration;
import org.apache.hadoop.hdfs.server.protocol.DatanodeStorage;
import org.apache.hadoop.hdfs.server.protocol.NamespaceInfo;
import org.apache.hadoop.hdfs.server.protocol.ReceivedDeletedBlockInfo;
import org.apache.hadoop.hdfs.server.protocol.SlowDiskReports;
import org.apache.hadoop.hdfs.server.protocol.SlowPeerReports;
import org.apache.hadoop.hdfs.server.protocol.StorageBlockReport;
import org.apache.hadoop.hdfs.server.protocol.StorageReceivedDeletedBlocks;
import org.apache.hadoop.hdfs.server.protocol.StorageReport;
import org.apache.hadoop.util.VersionInfo;

/**
 * A DataNode emulated at the level of the NameNode's {@link DatanodeProtocol}: it registers, heartbeats with one
 * storage, sends an (empty) first block report and reports replicas as received ({@code blockReceivedAndDeleted}),
 * as a real DataNode does after finalizing a replica — but it stores no bytes and keeps no per-block state. The
 * NameNode cannot tell the difference: its state per replica is built from exactly these calls. Used by
 * {@code exalt capacity}, where only the NameNode's memory is measured (the approach of Hadoop's own
 * {@code NNThroughputBenchmark}). Calls go straight to the in-process NameNode's RPC server object (no sockets).
 */
final class ProtocolDataNode {
    /** Capacity each emulated storage reports: large enough that placement never runs out of space. */
    static final long CAPACITY = 1L << 60;

    private final DatanodeProtocol nn;
    private final String bpid;
    final DatanodeRegistration reg;
    final DatanodeStorage storage;

    private ProtocolDataNode(DatanodeProtocol nn, String bpid, DatanodeRegistration reg, DatanodeStorage storage) {
        this.nn = nn;
        this.bpid = bpid;
        this.reg = reg;
        this.storage = storage;
    }

    /** Registers DataNode number {@code i} (transfer port {@code xferPortBase + i}; nothing listens there). */
    static ProtocolDataNode register(NameNode nameNode, int i, int xferPortBase) throws IOException {
        var rpc = nameNode.getRpcServer();
        NamespaceInfo ns = rpc.versionRequest();
        DatanodeID id = new DatanodeID("127.0.0.1", "emulated-dn-" + i, DataNode.generateUuid(), xferPortBase + i, 0, 0, 0);
        DatanodeRegistration reg = new DatanodeRegistration(id, new DataStorage(ns), new ExportedBlockKeys(),
                VersionInfo.getVersion());
        reg = rpc.registerDatanode(reg);
        reg.setNamespaceInfo(ns);
        ProtocolDataNode dn = new ProtocolDataNode(rpc, ns.getBlockPoolID(), reg, new DatanodeStorage(DatanodeStorage.generateUuid()));
        dn.heartbeat();
        rpc.blockReport(reg, dn.bpid, new StorageBlockReport[] {new StorageBlockReport(dn.storage, BlockListAsLongs.EMPTY)},
                new BlockReportContext(1, 0, System.nanoTime(), 0L));
        return dn;
    }

    /** One heartbeat; commands the NameNode returns (none in a fully replicated namespace) are ignored. */
    void heartbeat() throws IOException {
        StorageReport r = new StorageReport(storage, false, CAPACITY, 0L, CAPACITY, 0L, 0L);
        nn.sendHeartbeat(reg, new StorageReport[] {r}, 0L, 0L, 0, 0, 0, null, false, SlowPeerReports.EMPTY_REPORT,
                SlowDiskReports.EMPTY_REPORT);
    }

    /** Incremental block report: these (finalized) replicas were received. */
    void received(List<Block> blocks) throws IOException {
        if (blocks.isEmpty()) {
            return;
        }
        ReceivedDeletedBlockInfo[] infos = new ReceivedDeletedBlockInfo[blocks.size()];
        for (int i = 0; i < infos.length; i++) {
            infos[i] = new ReceivedDeletedBlockInfo(blocks.get(i), ReceivedDeletedBlockInfo.BlockStatus.RECEIVED_BLOCK, null);
        }
        nn.blockReceivedAndDeleted(reg, bpid, new StorageReceivedDeletedBlocks[] {new StorageReceivedDeletedBlocks(storage, infos)});
    }

    String uuid() {
        return reg.getDatanodeUuid();
    }
}
