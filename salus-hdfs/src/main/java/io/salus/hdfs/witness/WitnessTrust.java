package io.salus.hdfs.witness;

import io.salus.core.crypto.NodeKeys;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import io.salus.core.cert.RegionId;
import io.salus.core.crypto.KeyDirectory;
import io.salus.core.crypto.KeyringFile;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.SignatureScheme;

/**
 * What a witness needs to check certificates: the signature scheme, the verification keys of the
 * region-server replicas ({@link KeyDirectory}), and which three replicas form the RRS of each
 * region. Loaded from a trust file ({@code salus.witness.trust.file}, {@code --trust}):
 *
 * <pre>
 *   # comment
 *   scheme weak|hmac|ed25519
 *   node  &lt;node-id&gt; [hex verification key] [scheme weak|hmac|ed25519]
 *                                  (the key is omitted for the weak scheme; the node's own scheme, default the
 *                                   file's: its signatures verify only under it)
 *   rrs   &lt;volume&gt;#&lt;region&gt; &lt;id1&gt; &lt;id2&gt; &lt;id3&gt;
 *   rrs   &lt;volume&gt;#* &lt;id1&gt; &lt;id2&gt; &lt;id3&gt;        (every region of a volume)
 *   rrs   * &lt;id1&gt; &lt;id2&gt; &lt;id3&gt;                 (default for all regions)
 *   endpoint-volume &lt;volume&gt; test-seed &lt;long&gt; [server-scheme weak|hmac|ed25519]
 *                                  (TEST ONLY: the replica endpoint's regions; server-scheme: the endpoint's
 *                                   salus.endpoint.signature-scheme.server, default hmac as there)
 *   endpoint-volume * test-seed &lt;long&gt; [server-scheme ...]  (TEST ONLY: every volume's)
 *   endpoint-volume &lt;volume&gt;|* keyring &lt;path&gt; [server-scheme ...]
 *                                  (the replica endpoint's regions, keys derived from the region servers'
 *                                   keyring file salus.endpoint.keyring.file; a relative path is resolved
 *                                   against this file's directory; e.g. 'salus up')
 * </pre>
 *
 * Membership may also be set programmatically ({@link #setMembers}). Without a {@code scheme}
 * line the scheme is {@link #DEFAULT_SCHEME} (Ed25519): public verification keys only, so no
 * witness can sign for a replica. With {@code hmac} the "verification key" is the replica's
 * secret, so every witness host holding this file could forge any replica's signature; it is
 * accepted with a warning, for benchmarks and closed test setups only.
 */
public final class WitnessTrust {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(WitnessTrust.class);
  /** The scheme of a trust file without a {@code scheme} line, and of a witness without one. */
  public static final SignatureScheme DEFAULT_SCHEME = SignatureScheme.ED25519;
  private final KeyDirectory keys;
  private final Map<String, Set<NodeId>> rules = new ConcurrentHashMap<>();
  /** Principals (the Master / recovery orchestrator) whose signed queries may seal a slot. */
  private final Set<NodeId> recoverers = ConcurrentHashMap.newKeySet();
  /** An {@code endpoint-volume} line: how the replicas' keys are derived, and the scheme they sign with. */
  private record EndpointKeys(java.util.function.BiFunction<SignatureScheme, NodeId, NodeKeys> keys,
                              SignatureScheme scheme) {
  }

  private final Map<String, EndpointKeys> endpointVolumes = new ConcurrentHashMap<>();
  /** The volume name of {@code endpoint-volume * test-seed S}: every volume (no volume can be named so). */
  public static final String ALL_VOLUMES = "*";
  private volatile java.util.function.BiFunction<RegionId, Long, Set<NodeId>> membership;

  public WitnessTrust(SignatureScheme scheme) {
    // an endpoint replica's key is derived when a signature of it is checked, never registered: members() of any
    // (volume, region) an unauthenticated sender names used to register three keys for good (review rvw22)
    this.keys = new KeyDirectory(scheme).deriveUnregistered(this::endpointKeys);
  }

  /** The keys of {@code id} if it is a replica {@code <volume>/<i>/r0..r2} of an {@code endpoint-volume} line, or null. */
  private NodeKeys endpointKeys(NodeId id) {
    if (endpointVolumes.isEmpty()) {
      return null;
    }
    String n = id.name();
    int r = n.lastIndexOf('/');
    if (r <= 0 || n.length() != r + 3 || n.charAt(r + 1) != 'r' || n.charAt(r + 2) < '0' || n.charAt(r + 2) > '2') {
      return null;
    }
    int i = n.lastIndexOf('/', r - 1);
    if (i <= 0) {
      return null;
    }
    String index = n.substring(i + 1, r);
    try {
      if (Integer.parseInt(index) < 0 || !Integer.toString(Integer.parseInt(index)).equals(index)) {
        return null;
      }
    } catch (NumberFormatException e) {
      return null;
    }
    EndpointKeys ek = endpointVolumes.getOrDefault(n.substring(0, i), endpointVolumes.get(ALL_VOLUMES));
    return ek == null ? null : ek.keys().apply(ek.scheme(), id);
  }

  public SignatureScheme scheme() {
    return keys.scheme();
  }

  public KeyDirectory keys() {
    return keys;
  }

  public WitnessTrust register(NodeId id, byte[] verificationKey) {
    keys.register(id, verificationKey);
    return this;
  }

  /** Registers a node that signs with {@code nodeScheme} (its signatures verify only under it). */
  public WitnessTrust register(NodeId id, SignatureScheme nodeScheme, byte[] verificationKey) {
    keys.register(id, nodeScheme, verificationKey);
    return this;
  }

  /** Trusts {@code id} (the Master's recovery key) to sign sealing recovery queries. */
  public WitnessTrust registerRecoverer(NodeId id, byte[] verificationKey) {
    keys.register(id, verificationKey);
    recoverers.add(id);
    return this;
  }

  public boolean isRecoverer(NodeId id) {
    return recoverers.contains(id);
  }

  /** Sets the RRS of {@code pattern}: "volume#index", "volume#*" or "*". */
  public WitnessTrust setMembers(String pattern, Set<NodeId> members) {
    if (members.size() != 3) {
      throw new IllegalArgumentException("an RRS has exactly 3 replicas, got " + members.size()
          + " for " + pattern);
    }
    rules.put(pattern, Set.copyOf(members));
    return this;
  }

  /**
   * Installs a generation-aware membership source (e.g. salus-core's {@code Membership}:
   * {@code (r, g) -> config(r, g).replicaSet()}), consulted before the static rules.
   */
  public WitnessTrust useMembership(java.util.function.BiFunction<RegionId, Long, Set<NodeId>> m) {
    this.membership = m;
    return this;
  }

  /**
   * <b>Test only.</b> Regions of {@code volume} (created by the replica endpoint, {@code salus:<volume>_r0..2})
   * have, in generation 0, the members the endpoint's {@code VolumeAddressing} names
   * ({@code <volume>/<i>/r0..r2}), whose keys are the endpoint's deterministic test keys for {@code seed}
   * ({@code salus.endpoint.keyring.test-seed}): anyone who knows the seed can sign as those replicas. Trust-file
   * line: {@code endpoint-volume <volume> test-seed <long>}.
   */
  public WitnessTrust useEndpointTestKeys(String volume, long seed) {
    return useEndpointTestKeys(volume, seed, SignatureScheme.DEFAULT_SERVER);
  }

  /** As {@link #useEndpointTestKeys(String, long)}, the replicas signing with {@code serverScheme}. */
  public WitnessTrust useEndpointTestKeys(String volume, long seed, SignatureScheme serverScheme) {
    endpointVolumes.put(volume, new EndpointKeys((sc, id) -> NodeKeys.deterministic(sc, id, seed), serverScheme));
    return this;
  }

  /**
   * Regions of {@code volume} ({@code *}: every volume without a line of its own) have, in generation 0, the members
   * the endpoint's {@code VolumeAddressing} names ({@code <volume>/<i>/r0..r2}), whose keys are derived from the
   * servers' production keyring ({@link KeyringFile#serverKeys}; the region servers' {@code salus.endpoint.keyring.file}).
   * Trust-file line: {@code endpoint-volume <volume> keyring <path> [server-scheme ...]}.
   */
  public WitnessTrust useEndpointKeyring(String volume, KeyringFile keyring, SignatureScheme serverScheme) {
    endpointVolumes.put(volume, new EndpointKeys(keyring::serverKeys, serverScheme));
    return this;
  }

  private Set<NodeId> endpointMembers(RegionId region, long generation) {
    // `endpoint-volume * test-seed S`: every volume without a line of its own
    EndpointKeys ek = endpointVolumes.getOrDefault(region.volume(), endpointVolumes.get(ALL_VOLUMES));
    if (ek == null || generation != 0 || region.index() < 0) {
      return null;
    }
    Set<NodeId> m = new LinkedHashSet<>();
    for (int k = 0; k < 3; k++) {
      // salus-core's VolumeAddressing convention (not called: it pulls HBase classes into the daemon)
      // its key is derived when its signature is checked (endpointKeys), unless a `node` line registered one
      m.add(NodeId.of(region.volume() + "/" + region.index() + "/r" + k));
    }
    return m;
  }

  /** The RRS members of {@code region} in log generation {@code generation}, or null if unknown. */
  public Set<NodeId> members(RegionId region, long generation) {
    Set<NodeId> e = endpointMembers(region, generation);
    if (e != null) {
      return e;
    }
    java.util.function.BiFunction<RegionId, Long, Set<NodeId>> m = membership;
    if (m != null) {
      Set<NodeId> s = m.apply(region, generation);
      if (s != null) {
        return s;
      }
    }
    return members(region);
  }

  /** The RRS members of {@code region} from the static rules, or null if unknown. */
  public Set<NodeId> members(RegionId region) {
    Set<NodeId> m = rules.get(region.volume() + "#" + region.index());
    if (m == null) {
      m = rules.get(region.volume() + "#*");
    }
    if (m == null) {
      m = rules.get("*");
    }
    return m;
  }

  /** Parses a trust file; errors name the line and the expected syntax. */
  public static WitnessTrust load(Path file) throws IOException {
    List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
    WitnessTrust t = null;
    Map<NodeId, PendingKey> pendingKeys = new HashMap<>();
    Map<NodeId, byte[]> pendingRecoverers = new HashMap<>();
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i).strip();
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      String[] f = line.split("\\s+");
      String where = file + ":" + (i + 1) + ": ";
      switch (f[0]) {
        case "scheme" -> {
          if (f.length != 2 || t != null) {
            throw new IOException(where + "expected one line `scheme weak|hmac|ed25519` before"
                + " any node/rrs line (without it the scheme is ed25519)");
          }
          t = new WitnessTrust(parseScheme(f[1], where));
          if (t.scheme() == SignatureScheme.HMAC_SHA256) {
            LOG.warn("{}scheme hmac: this file holds every replica's HMAC secret, so anyone who can"
                + " read it (every witness host) can forge any replica's signature; use ed25519"
                + " outside benchmarks and closed test setups", where);
          } else if (t.scheme() == SignatureScheme.WEAK_CRC32C) {
            LOG.warn("{}scheme weak: signatures are salted CRCs that anyone can forge; use ed25519"
                + " outside tests", where);
          }
        }
        case "node" -> {
          if (t == null) {
            t = new WitnessTrust(DEFAULT_SCHEME);
          }
          int n = f.length;
          SignatureScheme nodeScheme = t.scheme();
          if (n >= 4 && f[n - 2].equals("scheme")) {
            nodeScheme = parseScheme(f[n - 1], where);
            n -= 2;
          }
          if (n < 2 || n > 3) {
            throw new IOException(where + "expected `node <id> [hex-key] [scheme weak|hmac|ed25519]`");
          }
          byte[] key;
          try {
            key = n == 3 ? HexFormat.of().parseHex(f[2]) : new byte[0];
          } catch (IllegalArgumentException e) {
            throw new IOException(where + "verification key is not hex: " + e.getMessage());
          }
          if (nodeScheme != SignatureScheme.WEAK_CRC32C && key.length == 0) {
            throw new IOException(where + "scheme " + nodeScheme + " needs the node's verification"
                + " key in hex (`node <id> <hex-key>`; without a `scheme` line the scheme is"
                + " ed25519)");
          }
          pendingKeys.put(NodeId.of(f[1]), new PendingKey(nodeScheme, key));
        }
        case "recoverer" -> {
          if (t == null) {
            t = new WitnessTrust(DEFAULT_SCHEME);
          }
          if (f.length < 2 || f.length > 3) {
            throw new IOException(where + "expected `recoverer <id> <hex-key>` (the Master's key"
                + " that signs sealing recovery queries)");
          }
          byte[] key;
          try {
            key = f.length == 3 ? HexFormat.of().parseHex(f[2]) : new byte[0];
          } catch (IllegalArgumentException e) {
            throw new IOException(where + "verification key is not hex: " + e.getMessage());
          }
          if (t.scheme() != SignatureScheme.WEAK_CRC32C && key.length == 0) {
            throw new IOException(where + "scheme " + t.scheme() + " needs the recoverer's"
                + " verification key in hex (`recoverer <id> <hex-key>`)");
          }
          pendingRecoverers.put(NodeId.of(f[1]), key);
        }
        case "rrs" -> {
          if (t == null) {
            t = new WitnessTrust(DEFAULT_SCHEME);
          }
          if (f.length != 5) {
            throw new IOException(where + "expected `rrs <volume>#<region>|<volume>#*|* <id1> <id2>"
                + " <id3>`");
          }
          Set<NodeId> m = new LinkedHashSet<>();
          for (int k = 2; k < 5; k++) {
            m.add(NodeId.of(f[k]));
          }
          if (m.size() != 3) {
            throw new IOException(where + "the three replicas must be distinct");
          }
          t.setMembers(f[1], m);
        }
        case "endpoint-volume" -> {
          if (t == null) {
            t = new WitnessTrust(DEFAULT_SCHEME);
          }
          SignatureScheme serverScheme = SignatureScheme.DEFAULT_SERVER;
          boolean keyring = f.length >= 3 && f[2].equals("keyring");
          if ((f.length != 4 && f.length != 6) || !(keyring || f[2].equals("test-seed"))
              || (f.length == 6 && !f[4].equals("server-scheme"))) {
            throw new IOException(where + "expected `endpoint-volume <volume> keyring <path>"
                + " [server-scheme weak|hmac|ed25519]` (the region servers' salus.endpoint.keyring.file and"
                + " salus.endpoint.signature-scheme.server, default " + SignatureScheme.DEFAULT_SERVER + "), or"
                + " `endpoint-volume <volume> test-seed <long> [server-scheme ...]` (test only; <volume> may be *)");
          }
          if (f.length == 6) {
            serverScheme = parseScheme(f[5], where);
          }
          if (keyring) {
            KeyringFile kf;
            try {
              kf = KeyringFile.load(file.toAbsolutePath().getParent().resolve(f[3]));
            } catch (IOException e) {
              throw new IOException(where + e.getMessage(), e);
            }
            t.useEndpointKeyring(f[1], kf, serverScheme);
          } else {
            long seed;
            try {
              seed = Long.parseLong(f[3]);
            } catch (NumberFormatException e) {
              throw new IOException(where + "test-seed " + f[3] + " is not a long integer");
            }
            LOG.warn("{}endpoint-volume {}: its replicas' keys are derived from a test seed; anyone who"
                + " knows it can sign as them (tests only)", where, f[1]);
            t.useEndpointTestKeys(f[1], seed, serverScheme);
          }
        }
        default -> throw new IOException(where + "unknown directive `" + f[0]
            + "` (expected scheme, node, recoverer, rrs or endpoint-volume)");
      }
    }
    if (t == null) {
      t = new WitnessTrust(DEFAULT_SCHEME);
    }
    for (Map.Entry<NodeId, PendingKey> e : pendingKeys.entrySet()) {
      t.register(e.getKey(), e.getValue().scheme(), e.getValue().key());
    }
    for (Map.Entry<NodeId, byte[]> e : pendingRecoverers.entrySet()) {
      if (pendingKeys.containsKey(e.getKey())) {
        throw new IOException(file + ": " + e.getKey() + " is both a `node` and a `recoverer`;"
            + " give the Master its own id and key");
      }
      t.registerRecoverer(e.getKey(), e.getValue());
    }
    return t;
  }

  /** A {@code node} line read before the whole file is: its scheme and verification key. */
  private record PendingKey(SignatureScheme scheme, byte[] key) {
  }

  static SignatureScheme parseScheme(String s, String where) throws IOException {
    return switch (s.toLowerCase(java.util.Locale.ROOT)) {
      case "weak", "weak_crc32c", "crc32c" -> SignatureScheme.WEAK_CRC32C;
      case "hmac", "hmac_sha256" -> SignatureScheme.HMAC_SHA256;
      case "ed25519" -> SignatureScheme.ED25519;
      default -> throw new IOException(where + "unknown scheme `" + s
          + "` (use weak, hmac or ed25519)");
    };
  }
}
