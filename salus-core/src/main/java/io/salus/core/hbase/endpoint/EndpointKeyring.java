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
 * Signing keys of the nodes a region hosts, and the verifier for every node of the volume. Two schemes, by role:
 * the client's ({@link #SCHEME_KEY}) and the servers' ({@link #SERVER_SCHEME_KEY}); the verifier records each
 * node's scheme with its key, so a signature is only ever checked under its signer's scheme.
 *
 * <p>Only a <b>test keyring</b> exists so far: every key is derived from {@link #TEST_SEED_KEY} and the node id
 * ({@link NodeKeys#deterministic}), so anyone who knows the seed can sign as any node. It must be set
 * explicitly; without it the endpoint refuses to start and says so. A production keyring (per-server keys and a
 * trust file, as salus-hdfs's witnesses have) is not built yet.
 */
public final class EndpointKeyring {
    /** Configuration key: seed of the deterministic test keys (tests only). */
    public static final String TEST_SEED_KEY = "salus.endpoint.keyring.test-seed";
    /**
     * Configuration key: the <b>client's</b> signature scheme (ED25519, HMAC_SHA256, WEAK_CRC32C); default
     * {@link SignatureScheme#DEFAULT_CLIENT} (Ed25519: the servers hold only its public key, so none of them can
     * forge the client's writes).
     */
    public static final String SCHEME_KEY = "salus.endpoint.signature-scheme";
    /**
     * Configuration key: the <b>servers'</b> signature scheme (replicas and metadata holders); default
     * {@link SignatureScheme#DEFAULT_SERVER} (HMAC_SHA256, see there for the threat model).
     */
    public static final String SERVER_SCHEME_KEY = "salus.endpoint.signature-scheme.server";

    private final KeyDirectory directory;
    private final SignatureScheme clientScheme;
    private final SignatureScheme serverScheme;
    private final Map<NodeId, Signer> signers = new HashMap<>();
    private final java.util.Set<NodeId> witnessHolders = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private final KeyDirectory witnessKeys;

    private EndpointKeyring(SignatureScheme clientScheme, SignatureScheme serverScheme) {
        this.clientScheme = clientScheme;
        this.serverScheme = serverScheme;
        this.directory = new KeyDirectory(serverScheme);
        this.witnessKeys = new KeyDirectory(serverScheme);
    }

    /** The deterministic test keyring for every node of a volume, all nodes signing with {@code scheme}. */
    public static EndpointKeyring deterministic(SignatureScheme scheme, long seed, VolumeAddressing addressing) {
        return deterministic(scheme, scheme, seed, addressing);
    }

    /**
     * The deterministic test keyring for every node of a volume: the client signs with {@code clientScheme}, every
     * other node (replicas, metadata holders) with {@code serverScheme}.
     */
    public static EndpointKeyring deterministic(SignatureScheme clientScheme, SignatureScheme serverScheme, long seed,
                                                VolumeAddressing addressing) {
        EndpointKeyring k = new EndpointKeyring(clientScheme, serverScheme);
        for (NodeId id : addressing.allNodes()) {
            NodeKeys keys = NodeKeys.deterministic(id.equals(addressing.client()) ? clientScheme : serverScheme, id,
                    seed);
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
        SignatureScheme client = scheme(conf, SCHEME_KEY, SignatureScheme.DEFAULT_CLIENT);
        SignatureScheme server = scheme(conf, SERVER_SCHEME_KEY, SignatureScheme.DEFAULT_SERVER);
        try {
            return deterministic(client, server, Long.parseLong(seed.trim()), addressing);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(TEST_SEED_KEY + "=" + seed + " is not a long integer", e);
        }
    }

    private static SignatureScheme scheme(Configuration conf, String key, SignatureScheme dflt) {
        String name = conf.get(key, dflt.name()).trim();
        try {
            return SignatureScheme.valueOf(name);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(key + "=" + name + " is not a signature scheme; use one of "
                    + java.util.Arrays.toString(SignatureScheme.values()), e);
        }
    }

    /** The client's scheme. */
    public SignatureScheme clientScheme() {
        return clientScheme;
    }

    /** The servers' scheme (replicas, metadata holders). */
    public SignatureScheme serverScheme() {
        return serverScheme;
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
            public SignatureScheme schemeOf(NodeId signer) {
                return witnessHolders.contains(signer) ? witnessKeys.schemeOf(signer) : directory.schemeOf(signer);
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
     * Records the verification key a witness announced for the holder it serves, under the scheme it announced.
     *
     * @throws IllegalArgumentException if that scheme is weaker than the servers' scheme (a downgrade: a witness
     *                                  may sign with the servers' scheme or a stronger one, e.g. Ed25519 under
     *                                  HMAC servers)
     */
    public void registerHolderKey(NodeId holder, SignatureScheme scheme, byte[] key) {
        if (!scheme.atLeastAsStrongAs(serverScheme)) {
            throw new IllegalArgumentException("the witness serving " + holder + " signs with " + scheme
                    + ", weaker than the servers' scheme " + serverScheme + ": set the witnesses' trust-file `scheme`"
                    + " line to " + serverScheme + " or stronger, or " + SERVER_SCHEME_KEY);
        }
        witnessKeys.register(holder, scheme, key);
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
