package io.salus.blockdriver.cli;

import java.util.List;
import java.util.ServiceLoader;
import java.util.Set;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * Entry point of the {@code salus} command line. The client's own sub-commands ({@code volume},
 * {@code nbd}) are declared below and run on the HBase client alone. Sub-commands that need
 * HBase/HDFS server classes ({@code up}, {@code status}, {@code witness}, {@code digests}) live in
 * the launcher artifact ({@code salus-blockdriver/salus-launcher}) and are added through
 * {@link Extension} ({@link ServiceLoader}) when that artifact is on the class path.
 */
@Command(
    name = "salus",
    mixinStandardHelpOptions = true,
    version = "salus 0.1.0-SNAPSHOT",
    description = "Salus block store: embedded cluster, volumes and NBD export.",
    subcommands = {
      CommandLine.HelpCommand.class,
      VolumeCommand.class,
      NbdCommand.class,
      KeysCommand.class,
    })
public final class SalusCli implements Runnable {

  /**
   * Sub-commands contributed by another artifact on the class path, registered in its
   * {@code META-INF/services/io.salus.blockdriver.cli.SalusCli$Extension}.
   */
  public interface Extension {
    /** picocli command objects (annotated with {@code @Command}), in help order. */
    List<Object> subcommands();
  }

  /** The sub-commands that only the launcher artifact provides. */
  public static final Set<String> LAUNCHER_COMMANDS = Set.of("up", "status", "witness", "digests");

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(System.out);
  }

  /** The full command tree: this artifact's sub-commands plus every {@link Extension}'s. */
  public static CommandLine commandLine() {
    CommandLine cli = new CommandLine(new SalusCli());
    for (Extension e : ServiceLoader.load(Extension.class, SalusCli.class.getClassLoader())) {
      for (Object sub : e.subcommands()) {
        cli.addSubcommand(sub);
      }
    }
    if (!cli.getSubcommands().keySet().containsAll(LAUNCHER_COMMANDS)) {
      cli.getCommandSpec().usageMessage().footer("",
          "up, status, witness and digests: in the launcher artifact, not on this class path"
              + " (the ./salus script puts it there for them).");
    }
    return cli;
  }

  public static int execute(String... args) {
    return execute(commandLine(), args);
  }

  /**
   * Runs {@code args} on {@code cli} (from {@link #commandLine()}); a launcher command asked for on
   * a class path without the launcher artifact is a usage error (exit 2) that says where it is.
   */
  public static int execute(CommandLine cli, String... args) {
    if (args.length > 0 && LAUNCHER_COMMANDS.contains(args[0])
        && !cli.getSubcommands().containsKey(args[0])) {
      cli.getErr().println("salus " + args[0] + ": this command is in the launcher artifact"
          + " (salus-blockdriver/salus-launcher), which is not on this class path (the client"
          + " distribution salus-blockdriver/target/lib carries the HBase client only); run it"
          + " with ./salus " + args[0] + ", or with"
          + " -cp 'salus-blockdriver/salus-launcher/target/salus-launcher-0.1.0-SNAPSHOT.jar:"
          + "salus-blockdriver/salus-launcher/target/lib/*'");
      return 2;
    }
    return cli.execute(args);
  }

  public static void main(String[] args) {
    System.exit(execute(args));
  }
}
