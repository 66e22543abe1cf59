package io.salus.blockdriver.launcher;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.log4j.FileAppender;
import org.apache.log4j.Level;
import org.apache.log4j.LogManager;
import org.apache.log4j.Logger;
import org.apache.log4j.PatternLayout;

/**
 * Sends every daemon's log (reload4j, which Hadoop and HBase use through slf4j) to
 * {@code DATA/logs/salus.log} so the console shows only progress and the readiness line.
 */
public final class LauncherLogging {
  private LauncherLogging() {}

  public static Path toFile(Path logDir) throws IOException {
    Files.createDirectories(logDir);
    Path file = logDir.resolve("salus.log");
    LogManager.resetConfiguration();
    Logger root = Logger.getRootLogger();
    root.setLevel(Level.INFO);
    FileAppender appender = new FileAppender(
        new PatternLayout("%d{ISO8601} %-5p [%t] %c{2}: %m%n"), file.toString(), true);
    root.addAppender(appender);
    // The chattiest components, kept at WARN so the log stays readable.
    Logger.getLogger("org.apache.hadoop.hdfs.server.datanode.DataNode.clienttrace").setLevel(Level.WARN);
    Logger.getLogger("org.apache.hadoop.hdfs.StateChange").setLevel(Level.WARN);
    Logger.getLogger("org.apache.zookeeper").setLevel(Level.WARN);
    Logger.getLogger("org.apache.hadoop.metrics2").setLevel(Level.WARN);
    return file;
  }
}
