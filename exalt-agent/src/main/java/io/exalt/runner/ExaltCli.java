package io.exalt.runner;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * {@code exalt}: the Exalt emulation runner. Run it with the agent (see exalt-agent/exalt):
 * <pre>exalt-agent/exalt hdfs --datanodes 50 --duration 60</pre>
 */
@Command(name = "exalt", mixinStandardHelpOptions = true, version = "exalt 0.1.0",
        description = "Emulate large HDFS clusters on one machine with Tardis data (see docs/exalt.md).",
        subcommands = {HdfsCommand.class, HBaseCommand.class, CapacityCommand.class, BlockScanCommand.class, PlotCommand.class, CommandLine.HelpCommand.class})
public final class ExaltCli implements Runnable {
    @Override
    public void run() {
        new CommandLine(this).usage(System.out);
    }

    public static void main(String[] args) {
        int rc = new CommandLine(new ExaltCli()).execute(args);
        System.exit(rc);
    }
}
