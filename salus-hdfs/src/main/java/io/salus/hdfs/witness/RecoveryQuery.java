package io.salus.hdfs.witness;

import java.nio.charset.StandardCharsets;

import io.salus.core.cert.RegionId;
import io.salus.core.cert.Wire;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.Signer;
import io.salus.core.crypto.Verifier;

/**
 * A recovery orchestrator's authorisation to seal one witness slot (rule 15): the Master signs
 * (region, generation, index, attempt), where {@code attempt} is the new generation the recovery
 * installs (it must exceed {@code generation}). The signature binds every field, so a captured query
 * cannot be replayed for another slot, region or generation; replaying it for the same slot only
 * re-reads the seal that slot already has. Only a principal listed as {@code recoverer} in the
 * witness trust file may seal.
 */
public record RecoveryQuery(RegionId region, long generation, long index, long attempt) {
  private static final byte[] DOMAIN = "salus-witness-recovery-query-v2\0"
      .getBytes(StandardCharsets.US_ASCII);

  public RecoveryQuery {
    if (region.volume().isEmpty() || region.index() < 0 || generation < 0 || index < 0) {
      throw new IllegalArgumentException("invalid query (" + region + ", gen " + generation
          + ", index " + index + ")");
    }
  }

  /** The bytes the recoverer signs (domain-separated from every certificate encoding). */
  public byte[] signedBytes() {
    return new Wire.Out().bytes(DOMAIN).str8(region.volume()).i32(region.index()).i64(generation)
        .i64(index).i64(attempt).toByteArray();
  }

  public byte[] sign(Signer recoverer) {
    return recoverer.sign(signedBytes());
  }

  /** Null if {@code sig} is {@code signer}'s valid signature for this query, else the reason. */
  public String checkSignature(NodeId signer, byte[] sig, Verifier keys) {
    if (attempt <= generation) {
      return "recovery attempt " + attempt + " must be a newer generation than the queried "
          + generation;
    }
    byte[] m = signedBytes();
    if (!keys.verify(signer, m, 0, m.length, sig)) {
      return "bad signature by " + signer + " on the recovery query for " + region + " gen "
          + generation + " index " + index + " attempt " + attempt;
    }
    return null;
  }
}
