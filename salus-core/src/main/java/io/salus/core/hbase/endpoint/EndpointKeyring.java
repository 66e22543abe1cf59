package io.salus.core.hbase.endpoint;

import io.salus.core.crypto.KeyDirectory;
import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.Verifier;
import io.salus.core.crypto.NodeKeys;
import io.salus.core.crypto.SignatureScheme;
import io.salus.core.crypto.Signer;
import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;

/**
 * Signing keys of the nodes a region hosts, and the verifier for every node of the volume.
 *
 * <p>Only a <b>test keyring</b> exists so far: every key is derived from {@link #TEST_SEED_KEY} and the node id
 * ({@link NodeKeys#deterministic}), so anyone who knows the seed can sign as any node. It must be set
 * explicitly; without it the endpoint refuses to start and says so. A production keyring (per-server keys and a
 * trust file, as salus-hdfs's witnesses have) is not built yet.
 */
public final class EndpointKeyring {
    /** Configuration key: seed of the deterministic test keys (tests only). */
    public static final String TEST_SEED_KEY = "salus.endpoint.keyring.test-seed";
    /** Configuration key: signature scheme name (ED25519, HMAC_SHA256, WEAK_CRC32C); default ED25519. */
    public static final String SCHEME_KEY = "salus.endpoint.signature-scheme";

    private final KeyDirectory directory;
    private final Map<NodeId, Signer> signers = new HashMap<>();
    private final java.util.Set<NodeId> witnessHolders = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private final KeyDirectory witnessKeys;

    private EndpointKeyring(KeyDirectory directory) {
        this.directory = directory;
        this.witnessKeys = new KeyDirectory(directory.scheme());
    }

    /** The deterministic test keyring for every node of a volume. */
    public static EndpointKeyring deterministic(SignatureScheme scheme, long seed, VolumeAddressing addressing) {
        EndpointKeyring k = new EndpointKeyring(new KeyDirectory(scheme));
        for (NodeId id : addressing.allNodes()) {
            NodeKeys keys = NodeKeys.deterministic(scheme, id, seed);
            k.directory.register(keys);
            k.signers.put(id, keys.signer());
        }
        return k;
    }

    /**
     * The keyring a configuration names.
     *
     * @throws IllegalArgumentException naming the missing or bad key and what to set
     */
    public static EndpointKeyring fromConfiguration(Configuration conf, VolumeAddressing addressing) {
        String seed = conf.get(TEST_SEED_KEY);
        if (seed == null) {
            throw new IllegalArgumentException("the Salus replica endpoint of volume " + addressing.geometry().volume()
                    + " has no keys: set " + TEST_SEED_KEY + "=<long> (deterministic test keys; a production"
                    + " keyring is not built yet)");
        }
        String schemeName = conf.get(SCHEME_KEY, SignatureScheme.ED25519.name());
        SignatureScheme scheme;
        try {
            scheme = SignatureScheme.valueOf(schemeName);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(SCHEME_KEY + "=" + schemeName + " is not a signature scheme; use one of "
                    + java.util.Arrays.toString(SignatureScheme.values()), e);
        }
        try {
            return deterministic(scheme, Long.parseLong(seed.trim()), addressing);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(TEST_SEED_KEY + "=" + seed + " is not a long integer", e);
        }
    }

    public KeyDirectory verifier() {
        return directory;
    }

    /**
     * The verifier replicas use: as {@link #verifier()}, except for metadata holders served by real witness stores
     * ({@link #useWitnessKeys}): their signatures (store acks) verify only with the key the witness announced
     * ({@link #registerHolderKey}), never with the test keyring's key the region server itself knows, and not at
     * all before the witness announced one.
     */
    public Verifier replicaVerifier() {
        return new Verifier() {
            @Override
            public SignatureScheme scheme() {
                return directory.scheme();
            }

            @Override
            public boolean verify(NodeId signer, byte[] msg, int off, int len, byte[] sig) {
                return witnessHolders.contains(signer) ? witnessKeys.verify(signer, msg, off, len, sig)
                        : directory.verify(signer, msg, off, len, sig);
            }
        };
    }

    /** From now on, signatures of these holders verify only with witness-announced keys. */
    public void useWitnessKeys(java.util.Collection<NodeId> holders) {
        witnessHolders.addAll(holders);
    }

    /**
     * Records the verification key a witness announced for the holder it serves.
     *
     * @throws IllegalArgumentException if the witness signs with another scheme than the volume's
     */
    public void registerHolderKey(NodeId holder, SignatureScheme scheme, byte[] key) {
        if (scheme != directory.scheme()) {
            throw new IllegalArgumentException("the witness serving " + holder + " signs with " + scheme
                    + " but the volume's scheme is " + directory.scheme() + ": set " + SCHEME_KEY
                    + " and the witnesses' trust-file `scheme` line to the same scheme");
        }
        witnessKeys.register(holder, key);
    }

    /** The signer of a node of the volume. */
    public Signer signer(NodeId id) {
        Signer s = signers.get(id);
        if (s == null) {
            throw new IllegalArgumentException("no signing key for " + id);
        }
        return s;
    }
}
