package io.salus.core.crypto;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.bouncycastle.crypto.digests.SHA256Digest;
import org.bouncycastle.crypto.generators.HKDFBytesGenerator;
import org.bouncycastle.crypto.params.HKDFParameters;

/**
 * A production keyring: the file an operator generates once ({@code salus keys init}) and installs, one variant on the
 * servers and one on the client. Replaces the deterministic test keyring (a 64-bit seed anyone can expand).
 *
 * <pre>
 *   # salus keyring v1
 *   server-secret &lt;64 hex digits&gt;            the servers' master secret (region servers, witnesses, client)
 *   client-public &lt;volume|*&gt; &lt;64 hex digits&gt;  a volume's client Ed25519 public key (the servers' file)
 *   client-secret &lt;volume|*&gt; &lt;64 hex digits&gt;  a volume's client Ed25519 private key (the client's file only)
 * </pre>
 *
 * <p>Every server node (replica, metadata holder) signs with a key derived from {@code server-secret} and its node id
 * (HKDF-SHA256, {@link #serverKeys}): 256 random bits instead of a guessable seed, so nobody without the file signs
 * as a server. The client signs with its own Ed25519 key, whose private half only the client's file holds: no server
 * and no witness can sign as the client. What it does not give: per-server keys bound to the server hosting a replica
 * (every holder of {@code server-secret} can derive every server node's key; the paper's fault model, faulty but not
 * malicious servers, section 3.1.1), see docs/salus-on-hbase.md "Keys".
 *
 * <p>The file holds secrets, so {@link #load} refuses one that group or others may read (as ssh does), naming the
 * {@code chmod} that fixes it.
 */
public final class KeyringFile {
    /** The volume name of a {@code *} line: every volume without a line of its own. */
    public static final String ALL_VOLUMES = "*";
    private static final byte[] KDF_SALT = "salus-node-key/v1".getBytes(StandardCharsets.UTF_8);
    private static final int KEY_BYTES = 32;

    private final byte[] serverSecret;
    private final Map<String, byte[]> clientPublic;
    private final Map<String, byte[]> clientSecret;

    private KeyringFile(byte[] serverSecret, Map<String, byte[]> clientPublic, Map<String, byte[]> clientSecret) {
        this.serverSecret = serverSecret;
        this.clientPublic = clientPublic;
        this.clientSecret = clientSecret;
    }

    /** The two files of a fresh keyring: the servers' and the client's, sharing {@code server-secret}. */
    public record Pair(KeyringFile servers, KeyringFile client) {
    }

    /**
     * A fresh keyring for {@code volume} ({@code *}: every volume): a random server secret and a random client
     * Ed25519 key, split into the servers' file (client public key only) and the client's (client private key).
     */
    public static Pair generate(String volume, SecureRandom rnd) {
        byte[] server = new byte[KEY_BYTES];
        rnd.nextBytes(server);
        byte[] client = new byte[KEY_BYTES];
        rnd.nextBytes(client);
        return new Pair(new KeyringFile(server, Map.of(volume, clientPublicOf(client)), Map.of()),
                new KeyringFile(server.clone(), Map.of(), Map.of(volume, client)));
    }

    /**
     * Reads a keyring file.
     *
     * @throws IOException naming the file, the line and the expected syntax; or the permissions and the chmod
     *                     that fixes them
     */
    public static KeyringFile load(Path file) throws IOException {
        if (!Files.isRegularFile(file)) {
            throw new IOException("keyring file " + file + " does not exist or is not a file; generate one with"
                    + " `salus keys init --dir <dir>` and point the key at it");
        }
        if (FileSystems.getDefault().supportedFileAttributeViews().contains("posix")) {
            Set<PosixFilePermission> p = Files.getPosixFilePermissions(file);
            for (PosixFilePermission bad : List.of(PosixFilePermission.GROUP_READ, PosixFilePermission.GROUP_WRITE,
                    PosixFilePermission.OTHERS_READ, PosixFilePermission.OTHERS_WRITE)) {
                if (p.contains(bad)) {
                    throw new IOException("keyring file " + file + " holds secret keys but its permissions are "
                            + PosixFilePermissions.toString(p) + ": run `chmod 600 " + file + "` (owner only)");
                }
            }
        }
        List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        byte[] server = null;
        Map<String, byte[]> pub = new LinkedHashMap<>();
        Map<String, byte[]> sec = new LinkedHashMap<>();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).strip();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            String where = file + ":" + (i + 1) + ": ";
            String[] f = line.split("\\s+");
            switch (f[0]) {
                case "server-secret" -> {
                    if (f.length != 2 || server != null) {
                        throw new IOException(where + "expected one line `server-secret <64 hex digits>`");
                    }
                    server = key(f[1], where, "server-secret");
                }
                case "client-public", "client-secret" -> {
                    if (f.length != 3) {
                        throw new IOException(where + "expected `" + f[0] + " <volume|*> <64 hex digits>`");
                    }
                    Map<String, byte[]> m = f[0].equals("client-public") ? pub : sec;
                    if (m.put(f[1], key(f[2], where, f[0])) != null) {
                        throw new IOException(where + "a second `" + f[0] + "` line for volume " + f[1]
                                + "; keep one");
                    }
                }
                default -> throw new IOException(where + "unknown directive `" + f[0]
                        + "` (expected server-secret, client-public or client-secret)");
            }
        }
        if (server == null) {
            throw new IOException(file + " has no `server-secret` line: it is not a Salus keyring (generate one"
                    + " with `salus keys init --dir <dir>`)");
        }
        for (Map.Entry<String, byte[]> e : sec.entrySet()) {
            byte[] listed = pub.get(e.getKey());
            if (listed != null && !java.util.Arrays.equals(listed, clientPublicOf(e.getValue()))) {
                throw new IOException(file + ": the client-public and client-secret lines of volume " + e.getKey()
                        + " are not one key pair");
            }
        }
        return new KeyringFile(server, Map.copyOf(pub), Map.copyOf(sec));
    }

    private static byte[] key(String hex, String where, String what) throws IOException {
        byte[] k;
        try {
            k = HexFormat.of().parseHex(hex);
        } catch (IllegalArgumentException e) {
            throw new IOException(where + what + " is not hex: " + e.getMessage());
        }
        if (k.length != KEY_BYTES) {
            throw new IOException(where + what + " must be " + KEY_BYTES + " bytes (" + 2 * KEY_BYTES
                    + " hex digits), got " + k.length);
        }
        return k;
    }

    /** Writes this keyring to {@code file} (owner-only, atomically); refuses to replace an existing file. */
    public void write(Path file) throws IOException {
        if (Files.exists(file)) {
            throw new IOException(file + " exists; a new keyring would orphan every certificate signed with the"
                    + " old one. Remove it yourself if that is what you want");
        }
        StringBuilder t = new StringBuilder("# salus keyring v1 (secret: keep owner-only)\n");
        t.append("server-secret ").append(HexFormat.of().formatHex(serverSecret)).append('\n');
        clientPublic.forEach((v, k) -> t.append("client-public ").append(v).append(' ')
                .append(HexFormat.of().formatHex(k)).append('\n'));
        clientSecret.forEach((v, k) -> t.append("client-secret ").append(v).append(' ')
                .append(HexFormat.of().formatHex(k)).append('\n'));
        SecretFiles.writeOwnerOnly(file, t.toString().getBytes(StandardCharsets.UTF_8));
    }

    /** The keys of server node {@code id} (replica or metadata holder) under {@code scheme}. */
    public NodeKeys serverKeys(SignatureScheme scheme, NodeId id) {
        HKDFBytesGenerator kdf = new HKDFBytesGenerator(new SHA256Digest());
        kdf.init(new HKDFParameters(serverSecret, KDF_SALT, id.utf8()));
        byte[] k = new byte[KEY_BYTES];
        kdf.generateBytes(k, 0, k.length);
        return NodeKeys.fromSecret(scheme, id, k);
    }

    /** True if this file holds any client private key (the servers' file must not). */
    public boolean holdsClientSecrets() {
        return !clientSecret.isEmpty();
    }

    /** The Ed25519 public key of {@code volume}'s client, from its own line or the {@code *} line; null if none. */
    public byte[] clientPublicKey(String volume) {
        byte[] k = clientPublic.getOrDefault(volume, clientPublic.get(ALL_VOLUMES));
        if (k == null) {
            byte[] secret = clientSecret.getOrDefault(volume, clientSecret.get(ALL_VOLUMES));
            return secret == null ? null : clientPublicOf(secret);
        }
        return k.clone();
    }

    /** The Ed25519 public key of a client private key. */
    private static byte[] clientPublicOf(byte[] secret) {
        return NodeKeys.fromSecret(SignatureScheme.ED25519, NodeId.of("client"), secret).verificationKey();
    }

    /** The Ed25519 keys of {@code volume}'s client (signing as {@code id}); null if this file holds none. */
    public NodeKeys clientKeys(String volume, NodeId id) {
        byte[] k = clientSecret.getOrDefault(volume, clientSecret.get(ALL_VOLUMES));
        return k == null ? null : NodeKeys.fromSecret(SignatureScheme.ED25519, id, k);
    }
}
