package io.salus.core.hbase.endpoint;

import io.salus.core.crypto.KeyDirectory;
import io.salus.core.crypto.KeyringFile;
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
 * <p>Two kinds: the <b>production keyring</b>, a {@link KeyringFile} ({@link #KEYRING_FILE_KEY} on the region servers,
 * {@link #CLIENT_KEYRING_FILE_KEY} on the client; {@code salus keys init} writes both): server nodes sign with keys
 * derived from the servers' 256-bit secret, the client with its own Ed25519 key whose private half only the client's
 * file holds, so the region servers can verify the client's writes but never sign one. And the <b>test keyring</b>:
 * every key derived from {@link #TEST_SEED_KEY} and the node id ({@link NodeKeys#deterministic}), so anyone who knows
 * the seed can sign as any node, the client included. One of them must be set explicitly; without either the endpoint
 * refuses to start and says so, and with both it refuses too (which one was meant is unclear).
 */
public final class EndpointKeyring {
    /** Configuration key: seed of the deterministic test keys (tests only). */
    public static final String TEST_SEED_KEY = "salus.endpoint.keyring.test-seed";
    /** Configuration key (region servers): the servers' {@link KeyringFile} (server secret, client public keys). */
    public static final String KEYRING_FILE_KEY = "salus.endpoint.keyring.file";
    /** Configuration key (the client): the client's {@link KeyringFile} (server secret, its client private key). */
    public static final String CLIENT_KEYRING_FILE_KEY = "salus.client.keyring.file";
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
     * The keyring of a region server: the production keyring of {@link #KEYRING_FILE_KEY} (it signs as every server
     * node of the volume, never as the client), or the test keyring of {@link #TEST_SEED_KEY}.
     *
     * @throws IllegalArgumentException naming the missing or bad key or file and what to set
     */
    public static EndpointKeyring fromConfiguration(Configuration conf, VolumeAddressing addressing) {
        return fromConfiguration(conf, addressing, false);
    }

    /**
     * The keyring of the volume's client: the production keyring of {@link #CLIENT_KEYRING_FILE_KEY} (it signs only
     * as the client), or the test keyring of {@link #TEST_SEED_KEY}.
     *
     * @throws IllegalArgumentException naming the missing or bad key or file and what to set
     */
    public static EndpointKeyring forClient(Configuration conf, VolumeAddressing addressing) {
        return fromConfiguration(conf, addressing, true);
    }

    private static EndpointKeyring fromConfiguration(Configuration conf, VolumeAddressing addressing,
                                                     boolean client) {
        String fileKey = client ? CLIENT_KEYRING_FILE_KEY : KEYRING_FILE_KEY;
        String file = conf.get(fileKey);
        String seed = conf.get(TEST_SEED_KEY);
        String volume = addressing.geometry().volume();
        if (file != null && seed != null) {
            throw new IllegalArgumentException("both " + fileKey + " and " + TEST_SEED_KEY + " are set for the Salus"
                    + " volume " + volume + ": unset " + TEST_SEED_KEY + " (the test keyring) to use the keyring file");
        }
        SignatureScheme clientScheme = scheme(conf, SCHEME_KEY, SignatureScheme.DEFAULT_CLIENT);
        SignatureScheme server = scheme(conf, SERVER_SCHEME_KEY, SignatureScheme.DEFAULT_SERVER);
        if (file != null) {
            KeyringFile kf;
            try {
                kf = KeyringFile.load(java.nio.file.Path.of(file.trim()));
            } catch (java.io.IOException e) {
                throw new IllegalArgumentException(fileKey + "=" + file + ": " + e.getMessage(), e);
            }
            return fromKeyringFile(kf, clientScheme, server, addressing, client, fileKey + "=" + file);
        }
        if (seed == null) {
            throw new IllegalArgumentException((client ? "the client of " : "the Salus replica endpoint of ")
                    + "volume " + volume + " has no keys: set " + fileKey + "=<file> (a keyring from `salus keys"
                    + " init --dir <dir>`: " + (client ? "client.keyring" : "server.keyring") + "), or "
                    + TEST_SEED_KEY + "=<long> (deterministic test keys, tests only)");
        }
        try {
            return deterministic(clientScheme, server, Long.parseLong(seed.trim()), addressing);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(TEST_SEED_KEY + "=" + seed + " is not a long integer", e);
        }
    }

    /**
     * The production keyring from a {@link KeyringFile}: server nodes' keys derived from its server secret, the
     * client's public key from it; on the client ({@code client}) also the client's signing key, on a server never.
     *
     * @param what names the file in errors (e.g. the configuration key and value)
     * @throws IllegalArgumentException if the file lacks what this role needs, or holds what it must not
     */
    public static EndpointKeyring fromKeyringFile(KeyringFile kf, SignatureScheme clientScheme,
                                                  SignatureScheme serverScheme, VolumeAddressing addressing,
                                                  boolean client, String what) {
        String volume = addressing.geometry().volume();
        if (clientScheme != SignatureScheme.ED25519) {
            throw new IllegalArgumentException(what + ": a keyring file's client keys are Ed25519, but " + SCHEME_KEY
                    + "=" + clientScheme + "; unset it (the default is ED25519)");
        }
        if (!client && kf.holdsClientSecrets()) {
            throw new IllegalArgumentException(what + " holds a client's private key (a client-secret line): a region"
                    + " server must not be able to sign as the client. Give the region servers the servers' file"
                    + " (server.keyring from `salus keys init`), which holds only client-public lines");
        }
        EndpointKeyring k = new EndpointKeyring(clientScheme, serverScheme);
        NodeId clientId = addressing.client();
        for (NodeId id : addressing.allNodes()) {
            if (id.equals(clientId)) {
                continue;
            }
            NodeKeys keys = kf.serverKeys(serverScheme, id);
            k.directory.register(keys);
            if (!client) {
                k.signers.put(id, keys.signer());
            }
        }
        if (client) {
            NodeKeys mine = kf.clientKeys(volume, clientId);
            if (mine == null) {
                throw new IllegalArgumentException(what + " has no client-secret line for volume " + volume + " (nor `*`):"
                        + " the client cannot sign its writes. Use the client's file (client.keyring from `salus keys"
                        + " init`)");
            }
            k.directory.register(mine);
            k.signers.put(clientId, mine.signer());
        } else {
            byte[] pub = kf.clientPublicKey(volume);
            if (pub == null) {
                throw new IllegalArgumentException(what + " has no client-public line for volume " + volume + " (nor"
                        + " `*`): the replicas could not check the client's writes. Add the line `salus keys init`"
                        + " printed for the client's key");
            }
            k.directory.register(clientId, SignatureScheme.ED25519, pub);
        }
        return k;
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
