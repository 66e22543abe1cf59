package io.salus.core.hbase;

import com.google.protobuf.RpcCallback;
import com.google.protobuf.RpcController;
import io.salus.core.hbase.generated.SalusRrsProtos;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.hbase.ServerName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.ipc.CoprocessorRpcUtils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * RRS replacement by the master (paper §3.2 "Using unanimous consent", §3.3.4 step 1 remapRegion): a client that
 * suspects replicas of one RRS (they do not answer, or they misbehave) asks the master to move them to region servers
 * outside the RRS ({@link RrsPlacement#planReplacement}); HBase's move procedure (which survives a master failover)
 * closes the replica and opens it on the new server, where region open runs Salus recovery (the new incarnation
 * catches up from its peers). The master coprocessor endpoint of {@link SalusPlacementObserver}; thin: the choice of
 * servers is {@link RrsPlacement}'s.
 *
 * <p>A request must name, for each suspect replica, the server that hosts it now: a request naming another volume's
 * replica or a server outside the RRS is refused. A repeated request for a replica this master already moved off the
 * named server answers what was done (idempotent while this master is active; after a failover it is refused as
 * naming a server that no longer hosts the replica, which is harmless: the replica has moved).
 */
public final class RrsReplacement extends SalusRrsProtos.SalusRrsService {
    private static final Logger LOG = LoggerFactory.getLogger(RrsReplacement.class);

    /** A refusal: the caller's HBase client must not retry it (DoNotRetryIOException), the message says why. */
    public static final class Refused extends org.apache.hadoop.hbase.DoNotRetryIOException {
        private static final long serialVersionUID = 1L;

        /** Public: the HBase client re-creates a server's exception by its class name and String constructor. */
        public Refused(String message) {
            super(message);
        }
    }

    /** What this master already did, by "volume/region/replica/from-server" (the idempotence record). */
    private final Map<String, String> done = new ConcurrentHashMap<>();
    private final java.util.function.Supplier<Connection> connection;

    public RrsReplacement(java.util.function.Supplier<Connection> connection) {
        this.connection = connection;
    }

    @Override
    public void replace(RpcController controller, SalusRrsProtos.ReplaceRequest request,
            RpcCallback<SalusRrsProtos.ReplaceResponse> callback) {
        try {
            List<String> lines = replace(request.getVolume(), request.getRegion(), suspects(request),
                    request.hasReason() ? request.getReason() : "");
            callback.run(SalusRrsProtos.ReplaceResponse.newBuilder().addAllDone(lines).build());
        } catch (IOException | RuntimeException e) {
            CoprocessorRpcUtils.setControllerException(controller,
                    e instanceof IOException io ? io : new IOException("RRS replacement failed: " + e, e));
            callback.run(null);
        }
    }

    private static Map<Integer, String> suspects(SalusRrsProtos.ReplaceRequest request) throws IOException {
        Map<Integer, String> out = new HashMap<>();
        for (SalusRrsProtos.Suspect s : request.getSuspectsList()) {
            if (out.put(s.getReplica(), s.getServer()) != null) {
                throw new Refused("RRS replacement refused: replica " + s.getReplica() + " named twice");
            }
        }
        return out;
    }

    /**
     * Replaces the suspect replicas of RRS {@code region} of {@code volume}: {@code suspects} maps replica index to
     * the server the caller saw it on (its full server name or host:port). Returns one line per suspect saying what
     * was done.
     *
     * @throws IOException naming why the request is refused (no such volume or region, a suspect not on the named
     *                     server, no server to move to: start another region server) or the move that failed
     */
    public List<String> replace(String volume, int region, Map<Integer, String> suspects, String reason)
            throws IOException {
        String what = "RRS replacement of region " + region + " of Salus volume '" + volume + "'";
        try (Admin admin = connection.get().getAdmin()) {
            RrsPlacementReconciler reader = new RrsPlacementReconciler(connection.get());
            List<List<RrsPlacement.Replica>> rrsSets = reader.readVolume(admin, volume);
            if (rrsSets == null) {
                throw new Refused(what + " refused: no complete, enabled Salus volume of that name");
            }
            if (region < 0 || region >= rrsSets.size()) {
                throw new Refused(what + " refused: the volume has regions 0.." + (rrsSets.size() - 1));
            }
            List<RrsPlacement.Replica> rrs = rrsSets.get(region);
            Map<Integer, ServerName> named = new HashMap<>();
            List<String> lines = new ArrayList<>();
            for (Map.Entry<Integer, String> e : new java.util.TreeMap<>(suspects).entrySet()) {
                int k = e.getKey();
                String key = volume + "/" + region + "/" + k + "/" + e.getValue();
                ServerName now = k >= 0 && k < rrs.size() ? rrs.get(k).server() : null;
                if (now != null && matches(now, e.getValue())) {
                    named.put(k, now);
                } else if (done.containsKey(key)) {
                    lines.add("replica " + k + ": already replaced (" + done.get(key) + ")");
                } else if (k < 0 || k >= rrs.size()) {
                    throw new Refused(what + " refused: replica " + k + " does not exist (replicas 0.."
                            + (rrs.size() - 1) + ")");
                } else {
                    throw new Refused(what + " refused: replica " + k + " is " + (now == null
                            ? "not open on any server (being reassigned)" : "on " + now) + ", not on "
                            + e.getValue() + ": the request names a server that does not host it");
                }
            }
            java.util.Collection<ServerName> live = admin.getRegionServers();
            for (java.util.Iterator<Map.Entry<Integer, ServerName>> it = named.entrySet().iterator(); it.hasNext();) {
                Map.Entry<Integer, ServerName> e = it.next();
                if (!live.contains(e.getValue())) {
                    // a dead server: HBase's ServerCrashProcedure reassigns its regions (a move would race it)
                    lines.add("replica " + e.getKey() + ": its server " + e.getValue() + " is not live; HBase's crash"
                            + " recovery reassigns it");
                    it.remove();
                }
            }
            if (named.isEmpty()) {
                return lines;
            }
            Map<ServerName, Integer> load = RrsPlacementReconciler.replicasPerServer(reader.readVolumes(admin));
            List<RrsPlacement.Move> moves;
            try {
                moves = RrsPlacement.planReplacement(rrs, named, live, load);
            } catch (RrsPlacement.ReplacementRefused e) {
                throw new Refused(what + " refused: " + e.getMessage());
            }
            for (RrsPlacement.Move m : moves) {
                int k = rrs.stream().map(RrsPlacement.Replica::region).toList().indexOf(m.region());
                LOG.warn("Salus {}: moving replica {} ({}) from suspect server {} to {}; client's reason: {}", what, k,
                        m.region().getRegionNameAsString(), m.from(), m.to(), reason);
                ServerName at = moveAndCheck(admin, m);
                String line = "moved from " + m.from() + " to " + at;
                done.put(volume + "/" + region + "/" + k + "/" + suspects.get(k), line);
                lines.add("replica " + k + ": " + line);
            }
            return lines;
        }
    }

    /**
     * Client side: asks the active master to replace the suspect replicas ({@code suspects}: replica index to the
     * server the caller saw it on) of RRS {@code region} of {@code volume}. Returns the master's lines saying what it
     * did; waits for the moves.
     *
     * @throws IOException the master's refusal (it names why) or a failed call
     */
    public static List<String> request(Connection connection, String volume, int region, Map<Integer, String> suspects,
            String reason) throws IOException {
        try (Admin admin = connection.getAdmin()) {
            return SalusRrsProtos.SalusRrsService.newBlockingStub(admin.coprocessorService())
                    .replace(null, replaceRequest(volume, region, suspects, reason)).getDoneList();
        } catch (com.google.protobuf.ServiceException e) {
            Throwable c = e.getCause() != null ? e.getCause() : e;
            throw new IOException("the master did not replace replicas " + suspects.keySet() + " of region " + region
                    + " of Salus volume '" + volume + "': " + c.getMessage()
                    + (c.getMessage() != null && c.getMessage().contains("UnknownProtocolException")
                    ? " (is io.salus.core.hbase.SalusPlacementObserver in hbase.coprocessor.master.classes?)" : ""),
                    c);
        }
    }

    /** {@link #request(Connection, String, int, Map, String)} over an asynchronous connection. */
    public static java.util.concurrent.CompletableFuture<List<String>> request(
            org.apache.hadoop.hbase.client.AsyncConnection connection, String volume, int region,
            Map<Integer, String> suspects, String reason) {
        SalusRrsProtos.ReplaceRequest req = replaceRequest(volume, region, suspects, reason);
        java.util.concurrent.CompletableFuture<SalusRrsProtos.ReplaceResponse> f = connection.getAdmin()
                .<SalusRrsProtos.SalusRrsService.Stub, SalusRrsProtos.ReplaceResponse>coprocessorService(
                        SalusRrsProtos.SalusRrsService::newStub,
                        (stub, controller, done) -> stub.replace(controller, req, done));
        return f.handle((resp, err) -> {
            if (err != null) {
                Throwable c = err instanceof java.util.concurrent.CompletionException && err.getCause() != null
                        ? err.getCause() : err;
                throw new java.util.concurrent.CompletionException(new IOException("the master did not replace"
                        + " replicas " + suspects.keySet() + " of region " + region + " of Salus volume '" + volume
                        + "': " + c.getMessage(), c));
            }
            return resp.getDoneList();
        });
    }

    private static SalusRrsProtos.ReplaceRequest replaceRequest(String volume, int region,
            Map<Integer, String> suspects, String reason) {
        SalusRrsProtos.ReplaceRequest.Builder b = SalusRrsProtos.ReplaceRequest.newBuilder().setVolume(volume)
                .setRegion(region).setReason(reason == null ? "" : reason);
        new java.util.TreeMap<>(suspects).forEach((k, s) -> b.addSuspects(
                SalusRrsProtos.Suspect.newBuilder().setReplica(k).setServer(s)));
        return b.build();
    }

    /**
     * Moves as planned and returns where the region is open afterwards. HBase's move waits for its procedure, but the
     * procedure's assign step may open the region elsewhere than asked (seen with a region server that had just
     * started: the region reopened on its old server): then it asks again, a few times.
     *
     * @throws IOException if the region is still not on the planned server, or still on the suspect one
     */
    private ServerName moveAndCheck(Admin admin, RrsPlacement.Move m) throws IOException {
        ServerName at = null;
        for (int attempt = 1; attempt <= MOVE_ATTEMPTS; attempt++) {
            admin.move(m.region().getEncodedNameAsBytes(), m.to()); // waits for the move procedure
            at = where(m.region());
            if (m.to().equals(at)) {
                return at;
            }
            LOG.warn("Salus RRS replacement: HBase opened {} on {}, not on {} as asked (attempt {} of {})",
                    m.region().getRegionNameAsString(), at, m.to(), attempt, MOVE_ATTEMPTS);
            try {
                Thread.sleep(1000L * attempt);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new java.io.InterruptedIOException("interrupted while moving " + m.region().getEncodedName());
            }
        }
        if (at != null && !at.equals(m.from())) {
            return at; // off the suspect server at least: the placement observer keeps the RRS on three servers
        }
        throw new IOException("HBase did not move " + m.region().getRegionNameAsString() + " off " + m.from()
                + " after " + MOVE_ATTEMPTS + " attempts (it is on " + at + "); see the master's log");
    }

    private static final int MOVE_ATTEMPTS = 5;

    private ServerName where(org.apache.hadoop.hbase.client.RegionInfo region) throws IOException {
        try (org.apache.hadoop.hbase.client.RegionLocator l = connection.get().getRegionLocator(region.getTable())) {
            org.apache.hadoop.hbase.HRegionLocation loc = l.getRegionLocation(region.getStartKey(), true);
            return loc == null ? null : loc.getServerName();
        }
    }

    /** True if {@code given} names {@code s}: its full server name or its host:port. */
    static boolean matches(ServerName s, String given) {
        return s.toString().equals(given) || s.getAddress().toString().equals(given);
    }
}
