package io.salus.it.salus;

import static org.junit.jupiter.api.Assertions.*;

import io.salus.blockdriver.salus.SalusVolume;
import io.salus.core.hbase.VolumeGeometry;
import io.salus.core.hbase.endpoint.SalusReplicaEndpoint;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.regionserver.HRegion;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * A measurement (issue 27, Done-when "a replica rebuilt from its peers after its store is deleted, on a volume with
 * at least 2 GiB written"), not a test of timing. One real mini cluster (3 region servers, each paired with its own
 * DataNode; the production region size of 65,536 blocks of 4 KiB; checkpoints every 64 log entries as in
 * {@code salus up}); a SalusVolume of {@code -Dsalus.bench.rebuildAtSize.volumeMib} (default 3072) is written
 * sequentially with 1 MiB writes (8 outstanding, a known pattern per block) up to
 * {@code -Dsalus.bench.rebuildAtSize.writtenMib} (default 2112: eight whole regions and a quarter of the ninth). Then the
 * replica region {@code REGION/1} (the partly written region) is closed, its store files and its Salus log directory are
 * deleted through the NameNode, and it is opened again: it recovers from its peers (metadata first, then the blocks in
 * the background at the rebuild throttle). While it rebuilds, a reader reads random ranges of the volume through the
 * same mount and checks every byte against the pattern, and a writer overwrites the first blocks of that region. The
 * heap after a full GC of this JVM (which holds the client, three region servers and three DataNodes) is sampled
 * throughout. Writes {@code DIR/salus-rebuild-at-size.csv} (the samples; the counters in its header). Asserts only what
 * must hold: the replica rebuilt, no read returned wrong bytes, the whole written range reads back afterwards.
 *
 * <pre>
 * mvn -B -o verify -pl it -am -DskipITs -Dtest=SalusRebuildAtSizeBench -Dsurefire.failIfNoSpecifiedTests=false \
 *   -Dsalus.bench.rebuildAtSize.out=$PWD/docs/benchmarks
 * </pre>
 */
@EnabledIfSystemProperty(named = "salus.bench.rebuildAtSize.out", matches = ".+")
class SalusRebuildAtSizeBench {
  static final int BLOCK = 4096;
  static final int CHUNK_BLOCKS = 256;

  /** The bytes of block {@code b} at version {@code ver} (a cheap pattern every reader can recompute). */
  static byte[] pattern(long b, int ver) {
    ByteBuffer buf = ByteBuffer.allocate(BLOCK);
    long x = b * 0x9E3779B97F4A7C15L + ver * 0xC2B2AE3D27D4EB4FL + 1;
    for (int i = 0; i < BLOCK / 8; i++) {
      x ^= x << 13;
      x ^= x >>> 7;
      x ^= x << 17;
      buf.putLong(x);
    }
    return buf.array();
  }

  static long heapAfterGcMib() {
    System.gc();
    System.gc();
    return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed() >> 20;
  }

  @Test
  void aReplicaWhoseStoreIsDeletedIsRebuiltFromItsPeersAtSize() throws Exception {
    Path dir = Path.of(System.getProperty("salus.bench.rebuildAtSize.out"));
    long volumeMib = Long.getLong("salus.bench.rebuildAtSize.volumeMib", 3072);
    long writtenMib = Long.getLong("salus.bench.rebuildAtSize.writtenMib", 2112);
    long after = Long.getLong("salus.bench.rebuildAtSize.after", 30);
    String loadBefore = SalusFaultTableTest.load();
    Instant started = Instant.now();
    List<String> header = new ArrayList<>();
    List<String> samples = new ArrayList<>();
    try (SalusMiniCluster cluster = new SalusMiniCluster(c -> {
      c.set("hbase.regionserver.abort.timeout.task", NoHaltOnAbortTimeout.class.getName());
      c.setInt(SalusReplicaEndpoint.CHECKPOINT_EVERY_KEY, 64); // salus up's (ProtocolConfig's) default
    })) {
      VolumeGeometry g = new VolumeGeometry("rebuildsize", volumeMib << 20, BLOCK,
          VolumeGeometry.defaultBlocksPerRegion((volumeMib << 20) / BLOCK));
      cluster.createVolume(g);
      long perRegion = g.blocksPerRegion();
      long writtenBlocks = (writtenMib << 20) / BLOCK;
      int victimRegion = (int) ((writtenBlocks - 1) / perRegion);
      long t0 = System.currentTimeMillis();
      java.util.function.Function<String, String> stamp =
          what -> String.format(Locale.ROOT, "%.1f,%s", (System.currentTimeMillis() - t0) / 1000.0, what);
      samples.add(stamp.apply("fill,0," + heapAfterGcMib() + ",,,,,"));
      ConcurrentHashMap<Long, Integer> versions = new ConcurrentHashMap<>();
      try (SalusVolume v = SalusVolume.open(cluster.connection(), g.volume())) {
        // ---- fill
        Semaphore window = new Semaphore(8);
        AtomicLong failedWrites = new AtomicLong();
        long nextSample = 256L << 20;
        for (long b = 0; b < writtenBlocks; b += CHUNK_BLOCKS) {
          int n = (int) Math.min(CHUNK_BLOCKS, writtenBlocks - b);
          byte[] data = new byte[n * BLOCK];
          for (int i = 0; i < n; i++) {
            System.arraycopy(pattern(b + i, 0), 0, data, i * BLOCK, BLOCK);
          }
          window.acquire();
          v.write(b, data, false).whenComplete((ok, e) -> {
            if (e != null) {
              failedWrites.incrementAndGet();
            }
            window.release();
          });
          long bytes = (b + n) * (long) BLOCK;
          if (bytes >= nextSample) {
            window.acquire(8);
            window.release(8);
            samples.add(stamp.apply("fill," + (bytes >> 20) + "," + heapAfterGcMib() + ",,,,,"));
            nextSample += 256L << 20;
          }
        }
        window.acquire(8);
        window.release(8);
        v.flush().get(5, TimeUnit.MINUTES);
        assertEquals(0, failedWrites.get(), "every fill write acknowledged");
        long fillSeconds = (System.currentTimeMillis() - t0) / 1000;
        long heapFilled = heapAfterGcMib();
        samples.add(stamp.apply("filled," + writtenMib + "," + heapFilled + ",,,,,"));
        header.add(String.format(Locale.ROOT, "# filled %d MiB (%d blocks) in %d s (%.2f MiB/s)", writtenMib,
            writtenBlocks, fillSeconds, writtenMib / (double) Math.max(1, fillSeconds)));

        // ---- delete the victim replica's store and Salus log while its region is closed, then reopen it
        HRegion victim = cluster.region(g, victimRegion, 1);
        org.apache.hadoop.fs.Path regionDir = victim.getRegionFileSystem().getRegionDir();
        org.apache.hadoop.fs.Path logDir = ((io.salus.core.hbase.storage.HdfsReplicaStorage) cluster
            .endpoint(g, victimRegion, 1).storage()).replicaDisk().directory();
        byte[] name = victim.getRegionInfo().getRegionName();
        var fs = cluster.util.getDFSCluster().getFileSystem();
        long storeBytes = fs.getContentSummary(regionDir).getLength();
        long logBytes = fs.exists(logDir) ? fs.getContentSummary(logDir).getLength() : 0;
        int files;
        boolean logGone;
        long deletedAt;
        try (Admin admin = cluster.connection().getAdmin()) {
          // the region's own flush, not Admin.flush(table): HBase 2.6's FlushTableProcedure hung here for 12 min (its
          // FlushRegionCallable failed "Unable to complete flush" on this region, then "procedure event for 123 is
          // null"); the close of the unassign below flushes the memstore either way
          victim.flush(true);
          admin.unassign(name, true);
          files = SalusFaultTableTest.deleteStoreFiles(fs, regionDir);
          logGone = fs.delete(logDir, true);
          assertTrue(files > 0, "the replica's store files were deleted (the fault acted)");
          deletedAt = System.currentTimeMillis();
          admin.assign(name);
        }
        header.add(String.format(Locale.ROOT, "# replica %d/1 (region of %d blocks, %d written): %d store files"
                + " (%d MiB) and %s (%d MiB) deleted through the NameNode while closed, then reopened", victimRegion,
            perRegion, writtenBlocks - victimRegion * perRegion, files, storeBytes >> 20,
            logGone ? "its Salus log directory" : "no Salus log directory", logBytes >> 20));

        // ---- while it rebuilds: verified random reads over the written range, overwrites in the victim region
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong readsOk = new AtomicLong();
        AtomicLong readsWrong = new AtomicLong();
        AtomicLong readErrors = new AtomicLong();
        AtomicLong overwrites = new AtomicLong();
        List<String> wrong = java.util.Collections.synchronizedList(new ArrayList<>());
        long victimFirst = victimRegion * perRegion;
        long overwriteSpan = 4096; // blocks [victimFirst, victimFirst + span) are overwritten, never read meanwhile
        Thread reader = new Thread(() -> {
          ThreadLocalRandom rnd = ThreadLocalRandom.current();
          while (!stop.get()) {
            // half the reads in the rebuilding replica's region, half anywhere in the written range
            long first = rnd.nextBoolean()
                ? victimFirst + overwriteSpan + rnd.nextLong(writtenBlocks - victimFirst - overwriteSpan - 16)
                : rnd.nextLong(victimFirst - 16); // 16 blocks read: never into the overwritten span
            try {
              byte[] got = v.read(first, 16).get(2, TimeUnit.MINUTES);
              for (int i = 0; i < 16; i++) {
                if (!java.util.Arrays.equals(got, i * BLOCK, (i + 1) * BLOCK, pattern(first + i, 0), 0, BLOCK)) {
                  readsWrong.incrementAndGet();
                  wrong.add("block " + (first + i));
                }
              }
              readsOk.incrementAndGet();
            } catch (Exception e) {
              readErrors.incrementAndGet();
            }
          }
        }, "rebuild-bench-reader");
        Thread writer = new Thread(() -> {
          int ver = 1;
          while (!stop.get()) {
            for (long b = victimFirst; b < victimFirst + overwriteSpan && !stop.get(); b += 16) {
              byte[] data = new byte[16 * BLOCK];
              for (int i = 0; i < 16; i++) {
                System.arraycopy(pattern(b + i, ver), 0, data, i * BLOCK, BLOCK);
              }
              try {
                v.write(b, data, false).get(2, TimeUnit.MINUTES);
                for (int i = 0; i < 16; i++) {
                  versions.put(b + i, ver);
                }
                overwrites.incrementAndGet();
              } catch (Exception e) {
                readErrors.incrementAndGet(); // counted with the errors: the bench fails on it below
              }
              try {
                Thread.sleep(50);
              } catch (InterruptedException e) {
                return;
              }
            }
            ver++;
          }
        }, "rebuild-bench-writer");
        reader.start();
        writer.start();
        Map<String, Long> c = Map.of();
        long servingAt = -1;
        long rebuiltAt = -1;
        long stopAt = Long.MAX_VALUE;
        long deadline = deletedAt + TimeUnit.MINUTES.toMillis(Long.getLong("salus.bench.rebuildAtSize.maxMinutes",
            60));
        long maxHeapDuring = 0;
        while (System.currentTimeMillis() < stopAt) {
          Thread.sleep(5000);
          SalusReplicaEndpoint ep = cluster.endpoint(g, victimRegion, 1);
          var host = ep == null ? null : ep.host();
          long heap = heapAfterGcMib();
          maxHeapDuring = Math.max(maxHeapDuring, heap);
          String phase = "reopening";
          if (host != null && host.serving()) {
            c = host.counters();
            if (servingAt < 0) {
              servingAt = System.currentTimeMillis();
            }
            phase = c.getOrDefault("rebuilding", 0L) == 1 ? "rebuilding" : "rebuilt";
            if (rebuiltAt < 0 && phase.equals("rebuilt") && c.getOrDefault("recoveryFromPeer", 0L) == 1) {
              rebuiltAt = System.currentTimeMillis();
              stopAt = rebuiltAt + after * 1000;
            }
          }
          samples.add(stamp.apply(String.format(Locale.ROOT, "%s,%d,%d,%d,%d,%d,%d,%d", phase, writtenMib, heap,
              c.getOrDefault("rebuildBlocks", 0L), c.getOrDefault("rebuildMissing", 0L),
              c.getOrDefault("rebuildHeld", 0L), readsOk.get(), readsWrong.get() + readErrors.get())));
          System.out.println("rebuild-at-size: " + samples.get(samples.size() - 1));
          if (rebuiltAt < 0 && System.currentTimeMillis() > deadline) {
            break;
          }
        }
        stop.set(true);
        reader.join(TimeUnit.MINUTES.toMillis(3));
        writer.join(TimeUnit.MINUTES.toMillis(3));
        header.add(String.format(Locale.ROOT, "# reopened to serving %.1f s, to every block rebuilt %.1f s after the"
                + " delete; counters of the rebuilt replica: %s", servingAt < 0 ? -1 : (servingAt - deletedAt) / 1000.0,
            rebuiltAt < 0 ? -1 : (rebuiltAt - deletedAt) / 1000.0, new java.util.TreeMap<>(c)));
        header.add(String.format(Locale.ROOT, "# while rebuilding: %d verified reads of 16 blocks, %d blocks with"
                + " wrong bytes, %d failed reads or writes, %d overwrites of 16 blocks in the rebuilding region;"
                + " heap after GC %d MiB filled, at most %d MiB during the rebuild", readsOk.get(), readsWrong.get(),
            readErrors.get(), overwrites.get(), heapFilled, maxHeapDuring));
        System.out.println(String.join("\n", header));
        assertTrue(rebuiltAt > 0, "the replica rebuilt from its peers: " + c);
        assertEquals(0, readsWrong.get(), "no read returned wrong bytes: " + wrong);
        assertEquals(0, readErrors.get(), "no read or write failed while the replica rebuilt");
        assertTrue(readsOk.get() > 0, "reads ran during the rebuild");

        // ---- the whole written range reads back (the rebuilt replica serves its share of the reads)
        long mismatched = 0;
        for (long b = 0; b < writtenBlocks; b += CHUNK_BLOCKS) {
          int n = (int) Math.min(CHUNK_BLOCKS, writtenBlocks - b);
          byte[] got = v.read(b, n).get(2, TimeUnit.MINUTES);
          for (int i = 0; i < n; i++) {
            byte[] want = pattern(b + i, versions.getOrDefault(b + i, 0));
            if (!java.util.Arrays.equals(got, i * BLOCK, (i + 1) * BLOCK, want, 0, BLOCK)) {
              mismatched++;
            }
          }
        }
        header.add("# read back after the rebuild: " + writtenBlocks + " blocks, " + mismatched + " with wrong bytes;"
            + " client counters " + v.counters());
        assertEquals(0, mismatched, "the whole written range reads back after the rebuild");
      }
    } finally {
      Files.createDirectories(dir);
      try (PrintWriter pw = new PrintWriter(dir.resolve("salus-rebuild-at-size.csv").toFile(),
          StandardCharsets.UTF_8)) {
        pw.println("# SalusRebuildAtSizeBench, started " + started + ", load average " + loadBefore + ", ended "
            + Instant.now() + ", load average " + SalusFaultTableTest.load());
        header.forEach(pw::println);
        pw.println("seconds,phase,client_mib_written,heap_used_mib_after_gc,rebuild_blocks_fetched,"
            + "rebuild_blocks_missing,rebuild_blocks_held,verified_reads,wrong_or_failed");
        samples.forEach(pw::println);
      }
    }
  }
}
