package io.salus.core.crypto;

import static org.junit.jupiter.api.Assertions.*;

import java.security.SecureRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class SignaturesTest {
    @ParameterizedTest
    @EnumSource(SignatureScheme.class)
    void signVerifyAndReject(SignatureScheme scheme) {
        NodeKeys a = NodeKeys.generate(scheme, NodeId.of("rs-a"), new SecureRandom());
        NodeKeys b = NodeKeys.deterministic(scheme, NodeId.of("rs-b"), 42);
        KeyDirectory dir = new KeyDirectory(scheme).register(a).register(b);
        byte[] msg = "put block 7 seq 9".getBytes();
        byte[] sig = a.signer().sign(msg);
        assertEquals(scheme.signatureLength(), sig.length);
        assertTrue(dir.verify(a.id(), msg, sig));
        assertFalse(dir.verify(b.id(), msg, sig), "signature must be bound to the signer id");
        byte[] other = msg.clone();
        other[0] ^= 1;
        assertFalse(dir.verify(a.id(), other, sig));
        assertFalse(dir.verify(NodeId.of("unknown"), msg, sig));
        assertFalse(dir.verify(a.id(), msg, new byte[1]));
        assertArrayEquals(b.signer().sign(msg), NodeKeys.deterministic(scheme, NodeId.of("rs-b"), 42).signer().sign(msg));
    }
}
