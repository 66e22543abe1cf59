package io.exalt.runner;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * The help of {@code exalt} and of every subcommand is pinned to the text recorded before the shared options moved
 * into {@link RunnerOptions} (a picocli mixin): same options, same order, same descriptions and defaults. To re-record
 * after an intended change: {@code -Dexalt.help.record=exalt-agent/src/test/resources/io/exalt/runner/help}.
 */
class CliHelpTest {
    private static final String[] COMMANDS = {"", "hdfs", "hbase", "blockscan", "capacity", "plot"};

    @Test
    void helpOfEveryCommandIsUnchanged() throws Exception {
        String record = System.getProperty("exalt.help.record");
        for (String c : COMMANDS) {
            CommandLine root = new CommandLine(new ExaltCli());
            CommandLine cl = c.isEmpty() ? root : root.getSubcommands().get(c);
            String usage = cl.getUsageMessage(CommandLine.Help.Ansi.OFF);
            String file = (c.isEmpty() ? "exalt" : c) + ".txt";
            if (record != null) {
                Files.writeString(Paths.get(record, file), usage);
                continue;
            }
            try (InputStream in = CliHelpTest.class.getResourceAsStream("help/" + file)) {
                assertEquals(new String(in.readAllBytes(), StandardCharsets.UTF_8), usage, "help of '" + c + "' changed");
            }
        }
    }

    @Test
    void sharedOptionsStillParseIntoEachCommand() {
        for (String c : new String[] {"hdfs", "hbase", "blockscan"}) {
            CommandLine cl = new CommandLine(new ExaltCli());
            CommandLine.ParseResult pr = cl.parseArgs(c, "--base-dir", "/tmp/x y", "--port-base", "31000", "--out", "o");
            CommandLine.ParseResult sub = pr.subcommand();
            assertEquals(Path.of("o"), sub.matchedOptionValue("--out", null), c);
            assertEquals(Integer.valueOf(31000), sub.matchedOptionValue("--port-base", null), c);
            assertEquals(new java.io.File("/tmp/x y"), sub.matchedOptionValue("--base-dir", null), c);
        }
    }
}
