package io.salus.core.hbase;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.hbase.HRegionLocation;
import org.apache.hadoop.hbase.ServerName;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.RegionInfo;
import org.apache.hadoop.hbase.client.RegionLocator;
import org.apache.hadoop.hbase.client.TableDescriptor;
import org.apache.hadoop.hbase.util.Bytes;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads where every Salus volume's replica regions are open (hbase:meta) and moves replicas so that each RRS
 * spans three distinct region servers ({@link RrsPlacement}). Runs inside the master
 * ({@link SalusPlacementObserver}); usable from any client with an HBase connection as well (e.g. an operator
 * tool, tests).
 */
public final class RrsPlacementReconciler {
    private static final Logger LOG = LoggerFactory.getLogger(RrsPlacementReconciler.class);

    /** What one pass found and did. */
    public record Pass(int volumes, int rrsSets, int violations, int moved, int failedMoves, int unfixable,
            int unsettled) {
    }

    private final Connection connection;

    public RrsPlacementReconciler(Connection connection) {
        this.connection = connection;
    }

    /** One pass over every Salus volume: finds colocated replicas and moves them. */
    public Pass reconcileOnce() throws IOException {
        try (Admin admin = connection.getAdmin()) {
            List<ServerName> live = new ArrayList<>(admin.getRegionServers());
            Map<String, List<List<RrsPlacement.Replica>>> volumes = readVolumes(admin);
            Map<ServerName, Integer> load = replicasPerServer(volumes);
            int rrsSets = 0;
            for (List<List<RrsPlacement.Replica>> v : volumes.values()) {
                rrsSets += v.size();
            }
            List<List<RrsPlacement.Replica>> all = new ArrayList<>();
            volumes.values().forEach(all::addAll);
            RrsPlacement.Plan plan = RrsPlacement.plan(all, live, load);
            int moved = 0;
            int failed = 0;
            for (RrsPlacement.Move m : plan.moves()) {
                try {
                    admin.move(m.region().getEncodedNameAsBytes(), m.to());
                    moved++;
                    LOG.info("Salus placement: moved {} from {} to {} (its RRS had two replicas on one server)",
                            m.region().getRegionNameAsString(), m.from(), m.to());
                } catch (IOException e) {
                    failed++; // e.g. the region is in transition; the next pass retries
                    LOG.warn("Salus placement: moving {} from {} to {} failed, will retry: {}",
                            m.region().getRegionNameAsString(), m.from(), m.to(), e.toString());
                }
            }
            if (plan.unfixable() > 0) {
                LOG.warn("Salus placement: {} RRS(s) have colocated replicas and cannot be fixed with {} live region"
                        + " server(s); start more region servers (3 are needed)", plan.unfixable(), live.size());
            }
            return new Pass(volumes.size(), rrsSets, plan.violations(), moved, failed, plan.unfixable(),
                    plan.unsettled());
        }
    }

    /**
     * Every Salus volume (complete, enabled, same region boundaries in its three tables) mapped to its RRSs, each
     * RRS as its three replicas in replica order with the server from hbase:meta.
     */
    public Map<String, List<List<RrsPlacement.Replica>>> readVolumes(Admin admin) throws IOException {
        Map<String, TableName[]> byVolume = new TreeMap<>();
        for (TableDescriptor d : admin.listTableDescriptorsByNamespace(Bytes.toBytes(SalusTableLayout.NAMESPACE))) {
            if (!SalusTableLayout.isReplicaTable(d)) {
                continue;
            }
            String q = d.getTableName().getQualifierAsString();
            int cut = q.lastIndexOf("_r");
            String replica = d.getValue(SalusTableLayout.REPLICA_ATTRIBUTE);
            if (cut <= 0 || replica == null || !q.substring(cut + 2).equals(replica) || !replica.matches("[0-9]")) {
                LOG.warn("Salus placement: table {} has the Salus layout attribute but its name and {} ({}) do not"
                        + " match <volume>_r<0|1|2>; skipped", d.getTableName(), SalusTableLayout.REPLICA_ATTRIBUTE,
                        replica);
                continue;
            }
            int r = Integer.parseInt(replica);
            if (r >= 0 && r < SalusTableLayout.REPLICAS) {
                byVolume.computeIfAbsent(q.substring(0, cut), k -> new TableName[SalusTableLayout.REPLICAS])[r] =
                        d.getTableName();
            }
        }
        Map<String, List<List<RrsPlacement.Replica>>> out = new TreeMap<>();
        for (Map.Entry<String, TableName[]> e : byVolume.entrySet()) {
            List<List<RrsPlacement.Replica>> rrs = rrsSets(admin, e.getKey(), e.getValue());
            if (rrs != null) {
                out.put(e.getKey(), rrs);
            }
        }
        return out;
    }

    /** Salus replica regions open on each server, over {@code volumes} ({@link #readVolumes}). */
    static Map<ServerName, Integer> replicasPerServer(Map<String, List<List<RrsPlacement.Replica>>> volumes) {
        Map<ServerName, Integer> load = new HashMap<>();
        for (List<List<RrsPlacement.Replica>> v : volumes.values()) {
            for (List<RrsPlacement.Replica> rrs : v) {
                for (RrsPlacement.Replica r : rrs) {
                    if (r.server() != null) {
                        load.merge(r.server(), 1, Integer::sum);
                    }
                }
            }
        }
        return load;
    }

    /**
     * The RRSs of one Salus volume (each as its three replicas in replica order, with the server from hbase:meta), or
     * null if it is not a complete, enabled Salus volume with the same region boundaries in its three tables.
     */
    public List<List<RrsPlacement.Replica>> readVolume(Admin admin, String volume) throws IOException {
        TableName[] tables = new TableName[SalusTableLayout.REPLICAS];
        for (int k = 0; k < tables.length; k++) {
            TableName t = SalusTableLayout.tableName(volume, k);
            if (!admin.tableExists(t) || !SalusTableLayout.isReplicaTable(admin.getDescriptor(t))) {
                return null;
            }
            tables[k] = t;
        }
        return rrsSets(admin, volume, tables);
    }

    private List<List<RrsPlacement.Replica>> rrsSets(Admin admin, String volume, TableName[] tables)
            throws IOException {
        List<List<HRegionLocation>> perReplica = new ArrayList<>();
        for (TableName t : tables) {
            if (t == null || !admin.isTableEnabled(t)) {
                return null; // being created, deleted or disabled
            }
            List<HRegionLocation> locs = new ArrayList<>();
            try (RegionLocator locator = connection.getRegionLocator(t)) {
                for (HRegionLocation l : locator.getAllRegionLocations()) {
                    RegionInfo ri = l.getRegion();
                    if (ri.getReplicaId() == RegionInfo.DEFAULT_REPLICA_ID && !ri.isSplitParent() && !ri.isOffline()) {
                        locs.add(l);
                    }
                }
            }
            locs.sort(Comparator.comparing(HRegionLocation::getRegion, RegionInfo.COMPARATOR));
            perReplica.add(locs);
        }
        int n = perReplica.get(0).size();
        for (List<HRegionLocation> locs : perReplica) {
            if (locs.size() != n) {
                LOG.warn("Salus placement: the replica tables of volume {} have different region counts {}; skipped",
                        volume, perReplica.stream().map(List::size).toList());
                return null;
            }
        }
        List<List<RrsPlacement.Replica>> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            List<RrsPlacement.Replica> rrs = new ArrayList<>(SalusTableLayout.REPLICAS);
            byte[] start = perReplica.get(0).get(i).getRegion().getStartKey();
            for (List<HRegionLocation> locs : perReplica) {
                HRegionLocation l = locs.get(i);
                if (!Bytes.equals(start, l.getRegion().getStartKey())) {
                    LOG.warn("Salus placement: the replica tables of volume {} have different region boundaries at"
                            + " region {}; skipped", volume, i);
                    return null;
                }
                rrs.add(new RrsPlacement.Replica(l.getRegion(), l.getServerName()));
            }
            out.add(rrs);
        }
        return out;
    }
}
