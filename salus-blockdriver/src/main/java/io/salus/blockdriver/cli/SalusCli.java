package io.salus.blockdriver.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * Entry point of the {@code salus} command line. Each sub-command is its own class (in this
 * package, or the module that owns the concept, like salus-hdfs's standalone witness daemon);
 * register new ones in {@code subcommands} below.
 */
@Command(
    name = "salus",
    mixinStandardHelpOptions = true,
    version = "salus 0.1.0-SNAPSHOT",
    description = "Salus block store: embedded cluster, volumes and NBD export.",
    subcommands = {
      CommandLine.HelpCommand.class,
      UpCommand.class,
      StatusCommand.class,
      VolumeCommand.class,
      NbdCommand.class,
      io.salus.hdfs.witness.WitnessDaemon.class,
      io.salus.hdfs.digest.DigestCheck.class,
    })
public final class SalusCli implements Runnable {

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(System.out);
  }

  public static int execute(String... args) {
    return new CommandLine(new SalusCli()).execute(args);
  }

  public static void main(String[] args) {
    System.exit(execute(args));
  }
}
