package io.exalt.runner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class NameNodeCapacityModelTest {
    @Test
    void fitRecoversALine() {
        NameNodeCapacityModel.Fit f = NameNodeCapacityModel.fit(List.of(new double[] {0, 100}, new double[] {10, 150},
                new double[] {20, 200}));
        assertEquals(5.0, f.slope(), 1e-9);
        assertEquals(100.0, f.intercept(), 1e-9);
        assertEquals(1.0, f.r2(), 1e-12);
        NameNodeCapacityModel.Fit noisy = NameNodeCapacityModel.fit(List.of(new double[] {0, 0}, new double[] {1, 2},
                new double[] {2, 1}));
        assertTrue(noisy.r2() < 1.0);
    }

    @Test
    void tooFewOrIdenticalPointsNameTheFix() {
        var e = assertThrows(IllegalArgumentException.class, () -> NameNodeCapacityModel.fit(List.<double[]>of(new double[] {1, 1})));
        assertTrue(e.getMessage().contains("--steps"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> NameNodeCapacityModel.fit(List.of(new double[] {1, 1}, new double[] {1, 2})));
        assertTrue(e.getMessage().contains("--steps"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> NameNodeCapacityModel.separate(2, 1, 2, 3));
        assertTrue(e.getMessage().contains("--blocks-per-file"), e.getMessage());
    }

    @Test
    void twoSeriesSeparateFileAndBlockCosts() {
        // files of 1 block cost 300 B, files of 4 blocks 600 B -> a block costs 100 B, a file without blocks 200 B
        NameNodeCapacityModel.Costs c = NameNodeCapacityModel.separate(1, 300, 4, 600);
        assertEquals(100, c.perBlock(), 1e-9);
        assertEquals(200, c.perFile(), 1e-9);
        assertEquals(400, c.file(2), 1e-9);
    }

    @Test
    void theCapacityArithmeticReproducesThePapersFirstRow() {
        // 376 heap bytes per one-block file: 1 GiB describes 2^30/376 blocks of 128 MiB, 3 replicas each = 1.15 PB raw
        NameNodeCapacityModel.Costs c = new NameNodeCapacityModel.Costs(276, 100);
        double raw = NameNodeCapacityModel.rawCapacity(c, 1L << 30, 0, 128L << 20, 128L << 20, 3);
        assertEquals(1.15, raw / 1e15, 0.005);
        // a fixed part of the heap is not available to the namespace
        assertEquals(raw / 2, NameNodeCapacityModel.rawCapacity(c, 1L << 30, 1L << 29, 128L << 20, 128L << 20, 3), 1);
        // 192 MB files (the paper's workload) have 2 blocks: 476 B per 192 MB of data
        double paper = NameNodeCapacityModel.rawCapacity(c, 1L << 30, 0, 192L << 20, 128L << 20, 3);
        assertEquals((1L << 30) / 476.0 * (192L << 20) * 3, paper, 1);
    }
}
