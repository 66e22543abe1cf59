package io.salus.core.hbase.endpoint;

import com.google.protobuf.ByteString;
import io.salus.core.cert.Wire;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.Signer;
import io.salus.core.crypto.Verifier;
import io.salus.core.hbase.endpoint.generated.SalusReplicaProtos;
import io.salus.core.hbase.endpoint.generated.SalusReplicaProtos.Envelope;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Caller authentication on the replica endpoint transport (issue 13, review rv13): who may talk to a replica.
 *
 * <p>The protocol messages do not all carry a signature (a {@code GetRequest}, a {@code DecisionRequest}, an
 * unfenced {@code MountQuery}, a {@code CheckpointPropose} are bare), and the transport's {@code Envelope.from} is
 * whatever the caller wrote. So the endpoint authenticates the <b>call</b>: every {@code deliver} and {@code poll}
 * carries a {@link SalusReplicaProtos.CallAuth}, the calling node's signature over {@link #signedBytes} (the volume,
 * the call kind, the destination region, the signer, its lease epoch, a counter, the client whose replies are asked
 * for, and a digest of the envelopes carried). The endpoint ({@link Checker}) accepts a call only if
 * <ul>
 *   <li>the signature verifies with the signer's key (the volume's client, or a replica of the volume);</li>
 *   <li>the counter is above every counter it accepted before from that signer, epoch and call kind (a captured call
 *       cannot be replayed, and the signed digest binds the envelopes to the call);</li>
 * </ul>
 * and then lets through only envelopes whose {@code from} the signer may speak for (the client: itself; a replica:
 * the nodes its region hosts, {@link VolumeAddressing#hostedBy}), and returns the client's replies only to the
 * client. An unauthenticated call has all its envelopes dropped and gets no replies (counted, WARN rate-limited).
 *
 * <p><b>Counters across restarts</b>: a signer's counter for a destination is {@code max(previous + 1, wall clock
 * in microseconds)} at every call, and the endpoint keeps its highest counter per (signer, epoch, kind). A
 * restarted process (a new writer, a reopened region) therefore starts above what its predecessor used as long as
 * its clock is not behind the predecessor's by more than the time between them (HBase itself refuses region
 * servers whose clock is off by more than {@code hbase.master.maxclockskew}, 30 s by default); and a writer with a
 * new lease epoch starts a fresh counter space, so a new writer is never wedged by its predecessor's counters, and a
 * fenced old writer still hears from the replicas that it is fenced.
 */
public final class CallAuth {
    private static final Logger LOG = LoggerFactory.getLogger(CallAuth.class);

    /** The call kinds (a separate counter space each: a poll and a deliver may be in flight together). */
    public static final int DELIVER = 1;
    public static final int POLL = 2;
    /** Epochs remembered per signer (the highest ones; an older epoch's calls are then refused as replays). */
    static final int EPOCHS_KEPT = 8;
    /** At most one WARN about refused calls per this many milliseconds (with the totals). */
    static final long WARN_EVERY_MILLIS = 10_000;

    private CallAuth() {
    }

    /** The bytes a call's signature covers. */
    public static byte[] signedBytes(int kind, String volume, VolumeAddressing.Address dest, String signer, long epoch,
                                     long counter, String replyTo, byte[] envelopesDigest) {
        return new Wire.Out().u8(0x52).u8(kind).str8(volume).str8(dest.table().getNameAsString()).blob(dest.row())
                .i32(dest.region()).i32(dest.replica()).str8(signer).i64(epoch).i64(counter)
                .str8(replyTo == null ? "" : replyTo).blob(envelopesDigest).toByteArray();
    }

    /** SHA-256 over the envelopes, each length-prefixed, in order. */
    public static byte[] digest(List<Envelope> envelopes) {
        MessageDigest md;
        try {
            md = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
        byte[] len = new byte[4];
        for (Envelope e : envelopes) {
            byte[] b = e.toByteArray();
            len[0] = (byte) (b.length >>> 24);
            len[1] = (byte) (b.length >>> 16);
            len[2] = (byte) (b.length >>> 8);
            len[3] = (byte) b.length;
            md.update(len);
            md.update(b);
        }
        return md.digest();
    }

    static long nowMicros() {
        java.time.Instant t = java.time.Instant.now();
        return t.getEpochSecond() * 1_000_000L + t.getNano() / 1_000;
    }

    /** The calling side: signs each call with one node's key. Thread-safe. */
    public static final class Signing {
        private final Signer signer;
        private final long epoch;
        private final String volume;
        private final Map<VolumeAddressing.Address, AtomicLong> counters = new ConcurrentHashMap<>();

        /**
         * @param signer the calling node's signer (the client's, or a replica's for its region's nodes)
         * @param epoch  the caller's writer lease epoch (0: none, e.g. region servers)
         */
        public Signing(String volume, Signer signer, long epoch) {
            this.volume = volume;
            this.signer = signer;
            this.epoch = epoch;
        }

        public NodeId id() {
            return signer.id();
        }

        /** Signs one call to {@code dest}; the counter is strictly increasing per destination. */
        public SalusReplicaProtos.CallAuth sign(int kind, VolumeAddressing.Address dest, String replyTo,
                                               List<Envelope> envelopes) {
            AtomicLong c = counters.computeIfAbsent(dest, k -> new AtomicLong());
            long now = nowMicros();
            long counter = c.updateAndGet(v -> Math.max(v + 1, now));
            byte[] sig = signer.sign(signedBytes(kind, volume, dest, signer.id().name(), epoch, counter, replyTo,
                    digest(envelopes)));
            return SalusReplicaProtos.CallAuth.newBuilder().setSigner(signer.id().name()).setEpoch(epoch)
                    .setCounter(counter).setSignature(ByteString.copyFrom(sig)).build();
        }
    }

    /** The endpoint side: verifies calls to one replica region and remembers the counters. Thread-safe. */
    public static final class Checker {
        private final VolumeAddressing addressing;
        private final VolumeAddressing.Address self;
        private final Verifier verifier;
        /** signer -> epoch -> [highest deliver counter, highest poll counter] */
        private final Map<NodeId, java.util.TreeMap<Long, long[]>> highest = new ConcurrentHashMap<>();
        private final AtomicLong unauthenticatedCalls = new AtomicLong();
        private final AtomicLong badSignatureCalls = new AtomicLong();
        private final AtomicLong replayedCalls = new AtomicLong();
        private final AtomicLong droppedEnvelopes = new AtomicLong();
        private final AtomicLong foreignSenderEnvelopes = new AtomicLong();
        private final AtomicLong refusedPolls = new AtomicLong();
        private final AtomicLong lastWarn = new AtomicLong();

        public Checker(VolumeAddressing addressing, int region, int replica, Verifier verifier) {
            this.addressing = addressing;
            this.self = addressing.address(region, replica);
            this.verifier = verifier;
        }

        /**
         * The node that signed this call, or null (unauthenticated: no auth, an unknown signer, a bad signature, a
         * replayed counter; counted and logged, rate-limited).
         */
        public NodeId authenticate(int kind, SalusReplicaProtos.CallAuth auth, String replyTo, List<Envelope> envelopes) {
            if (auth == null) {
                refused(unauthenticatedCalls, kind, null, "no signature");
                return null;
            }
            NodeId signer;
            try {
                signer = NodeId.of(auth.getSigner());
            } catch (RuntimeException e) {
                refused(badSignatureCalls, kind, null, "signer " + auth.getSigner() + ": " + e.getMessage());
                return null;
            }
            if (!signer.equals(addressing.client()) && !isReplica(signer)) {
                refused(badSignatureCalls, kind, signer, "not the volume's client nor one of its replicas");
                return null;
            }
            byte[] msg = signedBytes(kind, addressing.geometry().volume(), self, auth.getSigner(), auth.getEpoch(),
                    auth.getCounter(), replyTo, digest(envelopes));
            if (!verifier.verify(signer, msg, auth.getSignature().toByteArray())) {
                refused(badSignatureCalls, kind, signer, "bad signature");
                return null;
            }
            if (!advance(signer, auth.getEpoch(), kind, auth.getCounter())) {
                refused(replayedCalls, kind, signer, "counter " + auth.getCounter() + " (epoch " + auth.getEpoch()
                        + ") not above the last one accepted: a replay");
                return null;
            }
            return signer;
        }

        private boolean isReplica(NodeId n) {
            try {
                return addressing.parse(n).kind() == 'r';
            } catch (IllegalArgumentException e) {
                return false;
            }
        }

        private boolean advance(NodeId signer, long epoch, int kind, long counter) {
            java.util.TreeMap<Long, long[]> epochs = highest.computeIfAbsent(signer, k -> new java.util.TreeMap<>());
            synchronized (epochs) {
                long[] h = epochs.get(epoch);
                if (h == null) {
                    if (epochs.size() >= EPOCHS_KEPT && epoch < epochs.firstKey()) {
                        return false; // older than every epoch remembered: may be a replay
                    }
                    h = new long[] {Long.MIN_VALUE, Long.MIN_VALUE};
                    epochs.put(epoch, h);
                    while (epochs.size() > EPOCHS_KEPT) {
                        epochs.pollFirstEntry();
                    }
                }
                int i = kind == POLL ? 1 : 0;
                if (counter <= h[i]) {
                    return false;
                }
                h[i] = counter;
                return true;
            }
        }

        /** True if an authenticated {@code signer} may send an envelope {@code from}. */
        public boolean speaksFor(NodeId signer, NodeId from) {
            if (signer.equals(addressing.client())) {
                return from.equals(signer);
            }
            VolumeAddressing.Node n;
            try {
                n = addressing.parse(signer);
            } catch (IllegalArgumentException e) {
                return false;
            }
            return n.kind() == 'r' && addressing.hostedBy(n.region(), n.k()).contains(from);
        }

        /** Counts the envelopes of an unauthenticated call, dropped. */
        public void dropped(int n) {
            droppedEnvelopes.addAndGet(n);
        }

        /** Counts an envelope an authenticated caller sent in another node's name, dropped. */
        public void foreignSender(NodeId signer, NodeId from) {
            foreignSenderEnvelopes.incrementAndGet();
            warn("an envelope from " + from + " in a call signed by " + signer + " (which does not speak for it)");
        }

        /** Counts a poll or reply_to that did not come from the client, answered with nothing. */
        public void refusedReplies() {
            refusedPolls.incrementAndGet();
        }

        private void refused(AtomicLong counter, int kind, NodeId signer, String why) {
            counter.incrementAndGet();
            warn((kind == POLL ? "a poll" : "a deliver") + (signer == null ? "" : " signed by " + signer) + ": " + why);
        }

        private void warn(String what) {
            long now = System.currentTimeMillis();
            long last = lastWarn.get();
            if (now - last >= WARN_EVERY_MILLIS && lastWarn.compareAndSet(last, now)) {
                LOG.warn("{}: refused {} (unauthenticated calls drop their envelopes and get no replies); totals: {}",
                        self, what, counters());
            }
        }

        /** Counters of refused calls and dropped envelopes. */
        public Map<String, Long> counters() {
            return Map.of("authUnsignedCalls", unauthenticatedCalls.get(), "authBadSignatureCalls",
                    badSignatureCalls.get(), "authReplayedCalls", replayedCalls.get(), "authDroppedEnvelopes",
                    droppedEnvelopes.get(), "authForeignSenderEnvelopes", foreignSenderEnvelopes.get(),
                    "authRefusedReplies", refusedPolls.get());
        }

        /** The signers whose counters are remembered (tests). */
        Set<NodeId> signers() {
            return highest.keySet();
        }
    }
}
