package io.salus.hdfs.witness;

import io.salus.core.protocol.message.Message;

import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import io.salus.core.cert.CertType;
import io.salus.core.cert.Certificate;
import io.salus.core.cert.CertificateFormatException;
import io.salus.core.cert.CertificateVerificationException;
import io.salus.core.cert.RegionId;
import io.salus.core.cert.Statement;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.NodeKeys;
import io.salus.core.protocol.witness.CertificateStore;
import io.salus.core.protocol.witness.WitnessLog;

/**
 * A witness: salus-core's {@link WitnessLog} logic (combine three TENTATIVE_LOG_ENTRY into a
 * LOG_ENTRY, answer queries with the entry or a signed NO_NEXT_ENTRY) over a
 * {@link DurableCertificateStore}. One {@code WitnessLog} and one lock per region, so different
 * regions proceed in parallel; the fsync happens outside the lock and is shared by concurrent
 * writers (group commit). Thread-safe. No HDFS dependency: the DataNode plugin and the standalone
 * daemon both wrap this class in a {@link WitnessServer}.
 */
public final class WitnessService {
  /** Outcome of an offer or truncate request. */
  public record Outcome(int status, String reason, byte[] storeAck) {
    static final Outcome PENDING = new Outcome(WitnessProtocol.ST_PENDING, null, null);
    static final Outcome TRUNCATED = new Outcome(WitnessProtocol.ST_TRUNCATED, null, null);

    Outcome(int status, String reason) {
      this(status, reason, null);
    }

    /**
     * STORED, with this witness's signature over {@link Message.StoreAck#signedBytes} of the
     * stored slot: the replica's evidence that this witness (not the region server relaying it)
     * holds the LOG_ENTRY.
     */
    static Outcome stored(byte[] storeAck) {
      return new Outcome(WitnessProtocol.ST_STORED, null, storeAck);
    }

    static Outcome rejected(String why) {
      return new Outcome(WitnessProtocol.ST_REJECTED, why);
    }

    static Outcome badRequest(String why) {
      return new Outcome(WitnessProtocol.ST_BAD_REQUEST, why);
    }
  }

  /** At most this many slots per region wait for the other replicas' tentatives. */
  public static final int MAX_PENDING_SLOTS_PER_REGION = 4096;

  private final DurableCertificateStore store;
  private final WitnessTrust trust;
  private final NodeKeys keys;
  private final Map<RegionId, WitnessLog> logs = new ConcurrentHashMap<>();
  /**
   * Region locks, striped so that a query can take its region's lock without creating per-region
   * state: every read or write of a region's slots (offer, query, truncate) holds
   * {@link #lock(RegionId)}.
   */
  private final Object[] locks = new Object[64];
  private final CertificateStore deferred;
  final AtomicLong offersStored = new AtomicLong();
  final AtomicLong offersPending = new AtomicLong();
  final AtomicLong offersRejected = new AtomicLong();
  final AtomicLong queries = new AtomicLong();

  public WitnessService(DurableCertificateStore store, WitnessTrust trust, NodeKeys keys) {
    if (keys.scheme() != trust.scheme()) {
      throw new IllegalArgumentException("witness key scheme " + keys.scheme()
          + " differs from the trust scheme " + trust.scheme());
    }
    this.store = store;
    this.trust = trust;
    for (int i = 0; i < locks.length; i++) {
      locks[i] = new Object();
    }
    this.keys = keys;
    // WitnessLog stores under its region lock; the write is made durable after the lock is released.
    this.deferred = new CertificateStore() {
      @Override
      public Optional<Certificate> get(RegionId region, long generation, long index) {
        return store.get(region, generation, index);
      }

      @Override
      public void putIfAbsent(RegionId region, long generation, long index, Certificate c) {
        store.write(region, generation, index, c.encode());
      }

      @Override
      public void truncatePrefix(RegionId region, long generation, long throughIndex) {
        store.truncatePrefix(region, generation, throughIndex);
      }
    };
  }

  public DurableCertificateStore store() {
    return store;
  }

  public WitnessTrust trust() {
    return trust;
  }

  public NodeId id() {
    return keys.id();
  }

  public NodeKeys keys() {
    return keys;
  }

  private Object lock(RegionId region) {
    return locks[Math.floorMod(region.hashCode(), locks.length)];
  }

  private WitnessLog log(RegionId region) {
    return logs.computeIfAbsent(region,
        r -> new WitnessLog(keys.signer(), trust.keys(), deferred,
            trust::members));
  }

  /** Handles an OFFER of encoded TENTATIVE_LOG_ENTRY / LOG_ENTRY certificate bytes. */
  public Outcome offer(byte[] certBytes) {
    Certificate c;
    try {
      c = Certificate.decode(certBytes);
    } catch (CertificateFormatException e) {
      offersRejected.incrementAndGet();
      return Outcome.badRequest("undecodable certificate: " + e.getMessage());
    }
    if (c.type() != CertType.TENTATIVE_LOG_ENTRY && c.type() != CertType.LOG_ENTRY) {
      offersRejected.incrementAndGet();
      return Outcome.rejected("a witness stores TENTATIVE_LOG_ENTRY/LOG_ENTRY certificates, got "
          + c.type());
    }
    Statement.LogEntry st = c.statement(Statement.LogEntry.class);
    // Check membership and every signature before anything is kept for the region: an
    // unauthenticated sender must not make the witness create per-region state.
    Set<NodeId> members = trust.members(st.region(), st.generation());
    if (members == null) {
      offersRejected.incrementAndGet();
      return Outcome.rejected("no RRS membership known for region " + st.region()
          + "; add an `rrs` line to the witness trust file");
    }
    try {
      c.verifyOrThrow(trust.keys(), members);
    } catch (CertificateVerificationException e) {
      offersRejected.incrementAndGet();
      return Outcome.rejected(e.getMessage());
    }
    WitnessLog log = log(st.region());
    WitnessLog.Offer result;
    long position;
    synchronized (lock(st.region())) {
      result = log.offer(c);
      position = store.writePosition();
      if (result == WitnessLog.Offer.PENDING) {
        log.dropOldestPending(MAX_PENDING_SLOTS_PER_REGION);
      }
    }
    switch (result) {
      case STORED -> {
        store.awaitDurable(position);
        offersStored.incrementAndGet();
        return Outcome.stored(keys.signer().sign(Message.StoreAck.signedBytes(st.region().index(),
            st.generation(), st.index(), st.digest())));
      }
      case PENDING -> {
        offersPending.incrementAndGet();
        return Outcome.PENDING;
      }
      default -> {
        offersRejected.incrementAndGet();
        return Outcome.rejected(explainRejection(c, st));
      }
    }
  }

  private String explainRejection(Certificate c, Statement.LogEntry st) {
    Set<NodeId> members = trust.members(st.region(), st.generation());
    if (members == null) {
      return "no RRS membership known for region " + st.region()
          + "; add an `rrs` line to the witness trust file";
    }
    try {
      c.verifyOrThrow(trust.keys(), members);
    } catch (CertificateVerificationException e) {
      return e.getMessage();
    }
    return "slot " + st.region() + "/" + st.generation() + "/" + st.index()
        + " already holds a different LOG_ENTRY";
  }

  /**
   * Handles an authorised recovery QUERY (the caller checked the recoverer's signature, see
   * {@link RecoveryQuery}): the stored LOG_ENTRY or a NO_NEXT_ENTRY signed by this witness. The
   * NO_NEXT_ENTRY seals the slot (rule 15) also for a region with no {@link WitnessLog} here (none
   * accepted an offer since this witness started, e.g. after a restart): it is stored durably before
   * it is answered, without creating a {@code WitnessLog}, so a later offer for the slot finds it and
   * is refused. Only a region with no known membership (whose offers are all refused) gets an
   * unstored answer. An index a CHECKPOINT truncated is refused ({@link IllegalArgumentException}
   * naming the truncation point): nothing true can be signed about it.
   */
  public Certificate query(RegionId region, long generation, long index) {
    queries.incrementAndGet();
    synchronized (lock(region)) {
      long truncated = store.truncatedThrough(region, generation);
      if (index <= truncated) {
        // A NO_NEXT_ENTRY here would be false (later entries may be stored) and would seal the live
        // generation from this index; the asker read an older checkpoint than the one that truncated.
        throw new IllegalArgumentException("index " + index + " of " + region + " generation " + generation
            + " is covered by a CHECKPOINT (truncated through " + truncated + "): read the region's latest"
            + " checkpoint certificate and query after its index");
      }
      WitnessLog log = logs.get(region);
      if (log != null) {
        return log.query(region, generation, index);
      }
      Optional<Certificate> stored = store.get(region, generation, index);
      if (stored.isPresent()) {
        return stored.get();
      }
      Certificate none = Certificate.sign(CertType.NO_NEXT_ENTRY,
          new Statement.NoNextEntry(region, generation, index), keys.signer());
      if (trust.members(region, generation) == null) {
        return none;
      }
      store.putIfAbsent(region, generation, index, none); // durable before it is answered
      return store.get(region, generation, index).orElse(none);
    }
  }

  /**
   * Handles an unauthenticated (unsigned) QUERY read-only: the certificate stored at the slot (a
   * LOG_ENTRY, or the NO_NEXT_ENTRY of an earlier authorised seal), or empty. It never seals and never
   * signs anything, so a stranger cannot stall a live generation nor obtain a NO_NEXT_ENTRY recovery
   * could use.
   */
  public Optional<Certificate> read(RegionId region, long generation, long index) {
    queries.incrementAndGet();
    synchronized (lock(region)) {
      return store.get(region, generation, index);
    }
  }

  /** Regions for which this witness keeps protocol state (accepted offers only). */
  public int regionLogCount() {
    return logs.size();
  }

  /** Slots waiting for the other replicas' tentatives, over all regions. */
  public int pendingSlots() {
    int n = 0;
    for (Map.Entry<RegionId, WitnessLog> e : logs.entrySet()) {
      synchronized (lock(e.getKey())) {
        n += e.getValue().pendingCount();
      }
    }
    return n;
  }

  /** Drops entries &lt;= the checkpoint's index, once the CHECKPOINT certificate verifies. */
  public Outcome truncate(byte[] checkpointBytes) {
    Certificate c;
    try {
      c = Certificate.decode(checkpointBytes);
    } catch (CertificateFormatException e) {
      return Outcome.badRequest("undecodable certificate: " + e.getMessage());
    }
    if (c.type() != CertType.CHECKPOINT) {
      return Outcome.rejected("truncation needs a CHECKPOINT certificate, got " + c.type());
    }
    Statement.Checkpoint st = c.statement(Statement.Checkpoint.class);
    Set<NodeId> members = trust.members(st.region(), st.generation());
    if (members == null) {
      return Outcome.rejected("no RRS membership known for region " + st.region());
    }
    try {
      c.verifyOrThrow(trust.keys(), members);
    } catch (CertificateVerificationException e) {
      return Outcome.rejected(e.getMessage());
    }
    WitnessLog log = log(st.region());
    synchronized (lock(st.region())) {
      store.truncatePrefix(st.region(), st.generation(), st.throughIndex());
      log.dropPendingThrough(st.region(), st.generation(), st.throughIndex());
    }
    return Outcome.TRUNCATED;
  }
}
