package io.salus.blockdriver.nbd;

import io.salus.blockdriver.volume.BlockGeometry;
import io.salus.blockdriver.volume.MemoryVolume;
import java.net.InetAddress;

/**
 * Serves one {@link MemoryVolume} over NBD until killed:
 * {@code MemoryNbdMain NAME SIZE [PORT] [BLOCKSIZE]}. Used by the benchmark and for manual tests.
 */
public final class MemoryNbdMain {
  private MemoryNbdMain() {}

  public static void main(String[] args) throws Exception {
    String name = args.length > 0 ? args[0] : "mem";
    long bytes = BlockGeometry.parseBytes(args.length > 1 ? args[1] : "1G");
    int port = args.length > 2 ? Integer.parseInt(args[2]) : 10809;
    int bs = args.length > 3 ? Integer.parseInt(args[3]) : BlockGeometry.DEFAULT_BLOCK_SIZE;
    MemoryVolume v = new MemoryVolume(name, bytes / bs, bs);
    NbdServer s = new NbdServer(InetAddress.getLoopbackAddress(), port, NbdExports.of(v)).start();
    System.out.println("READY " + s.uri(name));
    System.out.flush();
    Thread.currentThread().join();
  }
}
