package io.exalt.runner;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.exalt.tardis.TardisGenerator;
import org.junit.jupiter.api.Test;

class WorkloadTest {
    /**
     * The clients write each file from one pre-generated copy of its bytes: the copy must be exactly the Tardis
     * stream of the file's length (chunk boundaries inside units, a last chunk shorter than the others, a length
     * that is not a whole number of units), or the emulation would write other data than before.
     */
    @Test
    void pregeneratedFileIsTheGeneratorStream() {
        for (long len : new long[] {0, 1, 11, 12, 13, Workload.CHUNK - 1, Workload.CHUNK, Workload.CHUNK + 5,
                3L * Workload.CHUNK + 12345, 32L << 20}) {
            byte[][] chunks = Workload.pregenerate(len);
            byte[] all = new byte[(int) len];
            int p = 0;
            for (int i = 0; i < chunks.length; i++) {
                if (i < chunks.length - 1) {
                    assertEquals(Workload.CHUNK, chunks[i].length, "chunk " + i + " of " + len);
                }
                System.arraycopy(chunks[i], 0, all, p, chunks[i].length);
                p += chunks[i].length;
            }
            assertEquals(len, p);
            byte[] want = new byte[(int) len];
            new TardisGenerator(len).fill(0, want, 0, want.length);
            assertArrayEquals(want, all, "length " + len);
        }
    }
}
