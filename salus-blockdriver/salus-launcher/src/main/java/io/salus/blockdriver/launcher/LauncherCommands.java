package io.salus.blockdriver.launcher;

import io.salus.blockdriver.cli.SalusCli;
import io.salus.hdfs.digest.DigestCheck;
import io.salus.hdfs.witness.WitnessDaemon;
import java.util.List;

/**
 * The {@code salus} sub-commands that need HBase/HDFS server classes: the embedded cluster
 * ({@code up}, {@code status}) and the server tools of salus-hdfs ({@code witness},
 * {@code digests}). Registered with {@link SalusCli} through
 * {@code META-INF/services/io.salus.blockdriver.cli.SalusCli$Extension}, so they exist exactly when
 * this artifact is on the class path.
 */
public final class LauncherCommands implements SalusCli.Extension {
  @Override
  public List<Object> subcommands() {
    return List.of(new UpCommand(), new StatusCommand(), new WitnessDaemon(), new DigestCheck());
  }
}
