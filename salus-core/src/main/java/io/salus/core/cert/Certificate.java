package io.salus.core.cert;

import io.salus.core.crypto.NodeId;
import io.salus.core.crypto.SignatureScheme;
import io.salus.core.crypto.Signer;
import io.salus.core.crypto.Verifier;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * A statement plus the signatures of the nodes that attest it. Immutable.
 *
 * <h2>Encoding (version 1, big-endian)</h2>
 * <pre>
 *   u8  version            = 1
 *   u8  certificate type   (CertType code)
 *   u8  signature scheme   (1 weak CRC32C, 2 HMAC-SHA256, 3 Ed25519)
 *   u16 statement length   n
 *   n   statement bytes    (canonical, per StatementKind)
 *   u8  signature count    (must equal the type's required count)
 *   per signature, sorted by signer id:
 *       u8 id length, id (UTF-8), u8 signature length, signature
 * </pre>
 * Signed bytes: {@code u8 version || u8 statement-kind || statement bytes}. The scheme byte only says how the
 * signatures are framed: {@link #verifyOrThrow} refuses a certificate whose scheme is not every signer's own scheme
 * in the verifier's keyring ({@link Verifier#schemeOf}). Encoding is
 * deterministic (signatures sorted by signer), so equal certificates have equal bytes.
 */
public final class Certificate {
    public static final int VERSION = 1;

    /** One node's signature. */
    public record Sig(NodeId signer, byte[] bytes) {
        public Sig {
            bytes = bytes.clone();
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Sig s && s.signer.equals(signer) && Arrays.equals(s.bytes, bytes);
        }

        @Override
        public int hashCode() {
            return signer.hashCode() * 31 + Arrays.hashCode(bytes);
        }
    }

    private final CertType type;
    private final SignatureScheme scheme;
    private final Statement statement;
    private final List<Sig> sigs;

    private Certificate(CertType type, SignatureScheme scheme, Statement statement, List<Sig> sigs) {
        if (statement.kind() != type.kind()) {
            throw new IllegalArgumentException(type + " needs a " + type.kind() + " statement, got " + statement.kind());
        }
        this.type = type;
        this.scheme = scheme;
        this.statement = statement;
        List<Sig> sorted = new ArrayList<>(sigs);
        sorted.sort(Comparator.comparing(Sig::signer));
        this.sigs = List.copyOf(sorted);
    }

    /** Signs a single-signature (tentative or NO_NEXT_ENTRY) certificate. */
    public static Certificate sign(CertType type, Statement statement, Signer signer) {
        if (type.requiredSignatures() != 1) {
            throw new IllegalArgumentException(type + " is formed by combining tentatives, not signed directly");
        }
        byte[] msg = signedBytes(statement);
        return new Certificate(type, signer.scheme(), statement, List.of(new Sig(signer.id(), signer.sign(msg))));
    }

    /**
     * Combines matching tentative certificates of distinct signers into the combined type.
     *
     * @throws IllegalArgumentException if types, schemes or statements differ, signers repeat, or the
     *                                  count is not the combined type's required count
     */
    public static Certificate combine(Collection<Certificate> tentatives) {
        if (tentatives.isEmpty()) {
            throw new IllegalArgumentException("nothing to combine");
        }
        Certificate first = tentatives.iterator().next();
        CertType full = first.type.combined();
        if (full == null) {
            throw new IllegalArgumentException(first.type + " certificates cannot be combined");
        }
        List<Sig> sigs = new ArrayList<>();
        Set<NodeId> seen = new HashSet<>();
        for (Certificate c : tentatives) {
            if (c.type != first.type || c.scheme != first.scheme || !c.statement.equals(first.statement)) {
                throw new IllegalArgumentException("tentative certificates do not match: " + first + " vs " + c);
            }
            for (Sig s : c.sigs) {
                if (!seen.add(s.signer())) {
                    throw new IllegalArgumentException("signer " + s.signer() + " appears twice");
                }
                sigs.add(s);
            }
        }
        if (sigs.size() != full.requiredSignatures()) {
            throw new IllegalArgumentException(full + " needs " + full.requiredSignatures() + " signatures, got "
                    + sigs.size());
        }
        return new Certificate(full, first.scheme, first.statement, sigs);
    }

    /** Builds a certificate from parts (used by decoders and by tests that forge bad certificates). */
    public static Certificate of(CertType type, SignatureScheme scheme, Statement statement, List<Sig> sigs) {
        return new Certificate(type, scheme, statement, sigs);
    }

    public CertType type() {
        return type;
    }

    public SignatureScheme scheme() {
        return scheme;
    }

    public Statement statement() {
        return statement;
    }

    /** The statement as its concrete record type. */
    public <T extends Statement> T statement(Class<T> cls) {
        if (!cls.isInstance(statement)) {
            throw new IllegalArgumentException(type + " holds a " + statement.getClass().getSimpleName() + ", not "
                    + cls.getSimpleName());
        }
        return cls.cast(statement);
    }

    public List<Sig> signatures() {
        return sigs;
    }

    public Set<NodeId> signers() {
        Set<NodeId> s = new HashSet<>();
        for (Sig g : sigs) {
            s.add(g.signer());
        }
        return s;
    }

    /** The bytes every signer of {@code s} signs. */
    public static byte[] signedBytes(Statement s) {
        return new Wire.Out().u8(VERSION).u8(s.kind().code()).bytes(s.encode()).toByteArray();
    }

    /** True iff the certificate has the required number of distinct signers and every signature verifies. */
    public boolean verify(Verifier v) {
        try {
            verifyOrThrow(v, null);
            return true;
        } catch (CertificateVerificationException e) {
            return false;
        }
    }

    /** Like {@link #verify(Verifier)}, additionally requiring every signer to be in {@code allowed}. */
    public boolean verify(Verifier v, Set<NodeId> allowed) {
        try {
            verifyOrThrow(v, allowed);
            return true;
        } catch (CertificateVerificationException e) {
            return false;
        }
    }

    /**
     * Verifies signatures, signer count and distinctness, and (if {@code allowed} is non-null) that
     * the signers are allowed, e.g. the members of the RRS.
     *
     * @throws CertificateVerificationException naming the first problem found
     */
    public void verifyOrThrow(Verifier v, Set<NodeId> allowed) {
        if (sigs.size() != type.requiredSignatures()) {
            throw new CertificateVerificationException(type + " needs " + type.requiredSignatures()
                    + " signatures, has " + sigs.size());
        }
        if (signers().size() != sigs.size()) {
            throw new CertificateVerificationException(type + " repeats a signer: " + sigs);
        }
        byte[] msg = signedBytes(statement);
        for (Sig s : sigs) {
            if (allowed != null && !allowed.contains(s.signer())) {
                throw new CertificateVerificationException(type + " signed by " + s.signer()
                        + ", who is not one of the expected signers " + allowed);
            }
            SignatureScheme theirs = v.schemeOf(s.signer());
            if (theirs != null && theirs != scheme) {
                // the keyring fixes each node's scheme; a certificate's scheme byte cannot change it (a downgrade)
                throw new CertificateVerificationException(type + " is signed with " + scheme + " but "
                        + s.signer() + " signs with " + theirs);
            }
            if (!v.verify(s.signer(), msg, s.bytes())) {
                throw new CertificateVerificationException("bad signature of " + s.signer() + " on " + type + " "
                        + statement);
            }
        }
    }

    /**
     * The canonical encoding (see class comment). Only what {@link #decode} accepts is encoded: a
     * signature count other than the type's, or a signature whose length is not the scheme's, is
     * refused here rather than written as bytes that would decode differently or not at all.
     *
     * @throws IllegalArgumentException naming the signature count or the signer whose signature is wrong
     */
    public byte[] encode() {
        if (sigs.size() != type.requiredSignatures()) {
            throw new IllegalArgumentException(type + " must carry " + type.requiredSignatures()
                    + " signature(s), has " + sigs.size() + ": not encodable (the decoder refuses it)");
        }
        for (Sig s : sigs) {
            if (s.bytes().length != scheme.signatureLength()) {
                throw new IllegalArgumentException("signature of " + s.signer() + " is " + s.bytes().length
                        + " bytes, " + scheme + " signatures are " + scheme.signatureLength()
                        + " bytes: not encodable (the decoder refuses it)");
            }
        }
        byte[] st = statement.encode();
        if (st.length > 0xffff) {
            throw new IllegalStateException("statement too large: " + st.length);
        }
        Wire.Out o = new Wire.Out().u8(VERSION).u8(type.code()).u8(scheme.code()).u16(st.length).bytes(st)
                .u8(sigs.size());
        for (Sig s : sigs) {
            o.str8(s.signer().name()).u8(s.bytes().length).bytes(s.bytes());
        }
        return o.toByteArray();
    }

    /**
     * Decodes {@link #encode()} output.
     *
     * @throws CertificateFormatException on unknown version/type/scheme, truncation, trailing bytes,
     *                                    a wrong signature count, or invalid statement fields
     */
    public static Certificate decode(byte[] bytes) {
        if (bytes == null) {
            throw new CertificateFormatException("no certificate bytes (null)", 0);
        }
        Wire.In in = new Wire.In(bytes);
        int version = in.u8("version");
        if (version != VERSION) {
            throw new CertificateFormatException("unsupported certificate encoding version " + version
                    + " (this build reads version " + VERSION + ")", 0);
        }
        CertType type = CertType.fromCode(in.u8("certificate type"), 1);
        SignatureScheme scheme;
        int schemeCode = in.u8("signature scheme");
        try {
            scheme = SignatureScheme.fromCode((byte) schemeCode);
        } catch (IllegalArgumentException e) {
            throw new CertificateFormatException(e.getMessage(), 2);
        }
        int stLen = in.u16("statement length");
        int stStart = in.pos();
        byte[] st = in.bytes(stLen, type.kind() + " statement");
        Statement statement;
        try {
            statement = Statement.read(type.kind(), new Wire.In(st));
        } catch (CertificateFormatException e) {
            throw e.within("bad " + type.kind() + " statement", stStart);
        }
        int n = in.u8("signature count");
        if (n != type.requiredSignatures()) {
            throw new CertificateFormatException(type + " must carry " + type.requiredSignatures()
                    + " signatures, found " + n, in.pos() - 1);
        }
        List<Sig> sigs = new ArrayList<>(n);
        NodeId prev = null;
        for (int i = 0; i < n; i++) {
            String id = in.str8("signer id " + i);
            if (id.isEmpty()) {
                throw new CertificateFormatException("empty signer id " + i, in.pos());
            }
            NodeId nid = new NodeId(id);
            if (prev != null && prev.compareTo(nid) >= 0) {
                throw new CertificateFormatException("signers not in canonical (sorted, distinct) order at " + id,
                        in.pos());
            }
            prev = nid;
            int sl = in.u8("signature " + i + " length");
            if (sl != scheme.signatureLength()) {
                throw new CertificateFormatException(scheme + " signatures are " + scheme.signatureLength()
                        + " bytes, signature " + i + " claims " + sl, in.pos() - 1);
            }
            sigs.add(new Sig(nid, in.bytes(sl, "signature " + i)));
        }
        in.expectEnd("certificate");
        return new Certificate(type, scheme, statement, sigs);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Certificate c && c.type == type && c.scheme == scheme && c.statement.equals(statement)
                && c.sigs.equals(sigs);
    }

    @Override
    public int hashCode() {
        return type.hashCode() * 31 + statement.hashCode();
    }

    @Override
    public String toString() {
        return type + statement.toString().substring(statement.getClass().getSimpleName().length()) + signers();
    }
}
