package io.salus.core.hbase.storage;

import static org.junit.jupiter.api.Assertions.*;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** The frame codec alone (no cluster): round trip, torn tail vs. damage. */
class LogFrameTest {
    private static byte[] twoFrames() throws IOException {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        o.write(LogFrame.encode(7, "hello".getBytes()));
        o.write(LogFrame.encode(8, new byte[300]));
        return o.toByteArray();
    }

    @Test
    void roundTripsIndexAndPayload() throws IOException {
        byte[] f = twoFrames();
        ByteArrayInputStream in = new ByteArrayInputStream(f);
        LogFrame.Frame a = LogFrame.read(in, 0, f.length, "f");
        LogFrame.Frame b = LogFrame.read(in, a.end(), f.length, "f");
        assertEquals(7, a.index());
        assertArrayEquals("hello".getBytes(), a.payload());
        assertEquals(8, b.index());
        assertEquals(f.length, b.end());
    }

    @Test
    void everyPrefixOfTheLastFrameIsATornTailNotDamage() throws IOException {
        byte[] f = twoFrames();
        long second = LogFrame.HEADER + 5;
        for (int cut = (int) second + 1; cut < f.length; cut++) {
            byte[] p = Arrays.copyOf(f, cut);
            ByteArrayInputStream in = new ByteArrayInputStream(p);
            assertNotNull(LogFrame.read(in, 0, p.length, "f"));
            assertNull(LogFrame.read(in, second, p.length, "f"), "cut at " + cut);
        }
    }

    @Test
    void aCompleteFrameThatDoesNotVerifyIsRefusedWithItsOffset() {
        for (int at : new int[] {0, 5, 9, 17, 21, LogFrame.HEADER + 2}) {
            byte[] f = LogFrame.encode(3, "payload".getBytes());
            f[at] ^= 0x01;
            CorruptReplicaLogException e = assertThrows(CorruptReplicaLogException.class,
                    () -> LogFrame.read(new ByteArrayInputStream(f), 0, f.length + 100, "seg-1"), "flip at " + at);
            assertTrue(e.getMessage().startsWith("seg-1: ") && e.getMessage().contains("byte 0"), e.getMessage());
        }
    }
}
