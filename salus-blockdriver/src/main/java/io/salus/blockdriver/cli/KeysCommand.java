package io.salus.blockdriver.cli;

import io.salus.core.crypto.KeyringFile;
import io.salus.core.hbase.endpoint.EndpointKeyring;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code salus keys init}: the production keyring of Salus volumes ({@link KeyringFile}). */
@Command(name = "keys", mixinStandardHelpOptions = true,
    description = "Generate the keys Salus volumes are signed with.",
    subcommands = {KeysCommand.Init.class})
public final class KeysCommand implements Runnable {
  /** The servers' file {@code init} writes. */
  public static final String SERVER_FILE = "server.keyring";
  /** The client's file {@code init} writes. */
  public static final String CLIENT_FILE = "client.keyring";

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }

  @Command(name = "init", mixinStandardHelpOptions = true,
      description = "Write a fresh keyring: DIR/" + SERVER_FILE + " (the servers' secret and the client's public"
          + " key: install it on every region server and witness) and DIR/" + CLIENT_FILE + " (the servers' secret"
          + " and the client's private key: the client's only). Both owner-only; existing files are never replaced.")
  static final class Init implements Callable<Integer> {
    @Option(names = "--dir", required = true, paramLabel = "DIR", description = "Directory to write the two files to.")
    Path dir;

    @Option(names = "--volume", paramLabel = "NAME", defaultValue = KeyringFile.ALL_VOLUMES,
        description = "The volume whose client the key is for (default ${DEFAULT-VALUE}: every volume).")
    String volume;

    @CommandLine.Spec CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
      PrintWriter out = spec.commandLine().getOut();
      PrintWriter err = spec.commandLine().getErr();
      try {
        Path servers = dir.resolve(SERVER_FILE);
        Path client = dir.resolve(CLIENT_FILE);
        for (Path p : new Path[] {servers, client}) {
          if (Files.exists(p)) {
            err.println("error: " + p + " exists; a new keyring would orphan every certificate signed with it."
                + " Choose another --dir, or remove it yourself if that is what you want");
            return 2;
          }
        }
        KeyringFile.Pair pair = KeyringFile.generate(volume, new SecureRandom());
        pair.servers().write(servers);
        pair.client().write(client);
        out.println("wrote " + servers + " (region servers, witnesses) and " + client + " (the client only)");
        out.println("region servers' hbase-site.xml: " + EndpointKeyring.KEYRING_FILE_KEY + "=" + servers.toAbsolutePath());
        out.println("client's hbase-site.xml:        " + EndpointKeyring.CLIENT_KEYRING_FILE_KEY + "="
            + client.toAbsolutePath());
        out.println("witness trust file:             endpoint-volume " + volume + " keyring "
            + servers.toAbsolutePath());
        return 0;
      } catch (IOException | IllegalArgumentException e) {
        err.println("error: " + e.getMessage());
        return 1;
      } finally {
        out.flush();
        err.flush();
      }
    }
  }
}
