package io.exalt.agent.boot;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.exalt.tardis.TardisGenerator;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Seeded model check of {@link CompressedFile}: random positional writes (Tardis slices at any phase, metadata, mutated
 * Tardis, short writes that leave partial units), hooked truncations, reads of random ranges and re-opens, compared
 * byte for byte with a plain array.
 */
class CompressedFileModelFuzzTest {
    static final TardisGenerator GEN = new TardisGenerator(1L << 32);

    @Test
    void randomWritesTruncationsAndReopensReadBackLikeAPlainFile(@TempDir Path dir) throws Exception {
        for (int seed = 0; seed < 40; seed++) {
            run(dir, seed);
        }
    }

    static void run(Path dir, int seed) throws Exception {
        Random r = new Random(seed);
        Path p = Files.createFile(dir.resolve("f" + seed));
        byte[] model = new byte[0];
        CompressedFile cf = CompressedFileTest.open(p);
        for (int op = 0; op < 300; op++) {
            int kind = r.nextInt(10);
            String what = "seed " + seed + " op " + op + " kind " + kind;
            if (kind < 6) {
                int size = model.length;
                int pos = r.nextInt(4) == 0 ? size : r.nextInt(size + 50);
                byte[] d;
                switch (r.nextInt(5)) {
                    case 0: // Tardis slice at a random phase
                    case 1: {
                        d = new byte[1 + r.nextInt(r.nextBoolean() ? 30 : 20_000)];
                        GEN.fill(r.nextInt(1 << 20), d, 0, d.length);
                        break;
                    }
                    case 2: { // the Tardis bytes that belong at this offset (a continuation), then a few mutated
                        d = new byte[1 + r.nextInt(5000)];
                        GEN.fill(pos, d, 0, d.length);
                        for (int i = r.nextInt(3); i > 0; i--) {
                            d[r.nextInt(d.length)] ^= (byte) (1 + r.nextInt(255));
                        }
                        break;
                    }
                    case 3: { // metadata
                        d = new byte[1 + r.nextInt(40)];
                        r.nextBytes(d);
                        break;
                    }
                    default: { // Tardis continuing at this offset, exact
                        d = new byte[1 + r.nextInt(13)];
                        GEN.fill(pos, d, 0, d.length);
                    }
                }
                cf.write(pos, d, 0, d.length);
                if (pos + d.length > model.length) {
                    model = Arrays.copyOf(model, pos + d.length);
                }
                System.arraycopy(d, 0, model, pos, d.length);
            } else if (kind == 6) {
                int n = model.length == 0 ? 0 : r.nextInt(model.length + 1);
                cf.truncateByHook(n); // what the agent's FileChannel.truncate hook does
                model = Arrays.copyOf(model, Math.min(n, model.length));
            } else if (kind == 7) {
                cf.close();
                cf = CompressedFileTest.open(p);
            } else {
                if (model.length == 0) {
                    continue;
                }
                int a = r.nextInt(model.length);
                int n = 1 + r.nextInt(Math.min(model.length - a, 30_000));
                byte[] got = new byte[n];
                assertEquals(n, cf.read(a, got, 0, n), what);
                assertArrayEquals(Arrays.copyOfRange(model, a, a + n), got, what + " read [" + a + ", " + (a + n) + ")");
            }
            assertEquals(model.length, cf.size(), what + ": size");
        }
        assertArrayEquals(model, CompressedFileTest.readAll(cf, model.length), "seed " + seed + " final");
        cf.close();
        CompressedFile again = CompressedFileTest.open(p);
        assertArrayEquals(model, CompressedFileTest.readAll(again, model.length), "seed " + seed + " reopened");
        again.close();
    }
}
