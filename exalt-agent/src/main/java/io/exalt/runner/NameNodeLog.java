package io.exalt.runner;

import java.io.File;
import java.io.IOException;
import org.apache.log4j.FileAppender;
import org.apache.log4j.Level;
import org.apache.log4j.Logger;
import org.apache.log4j.PatternLayout;

/**
 * Where the NameNode's "debug information" goes (§4.5.1, the paper's second fix): its state-change log, audit log
 * and INFO messages, one line per create/addBlock/complete. {@code off}: WARN only (the runner's default);
 * {@code disk}: a file in the cluster directory, on the same disk as the NameNode's edit log (the paper's setup
 * before the fix); {@code tmpfs}: a file in /dev/shm (the fix).
 */
final class NameNodeLog {
    static final String[] LOGGERS = {"org.apache.hadoop.hdfs.StateChange", "BlockStateChange",
        "org.apache.hadoop.hdfs.server.namenode.FSNamesystem.audit", "org.apache.hadoop.hdfs.server.namenode",
        "org.apache.hadoop.hdfs.server.blockmanagement"};
    private static FileAppender appender;

    private NameNodeLog() {
    }

    static synchronized void configure(String where, File base) throws IOException {
        for (String l : LOGGERS) {
            Logger lg = Logger.getLogger(l);
            if (appender != null) {
                lg.removeAppender(appender);
            }
            lg.setLevel(null);
            lg.setAdditivity(true);
        }
        if (appender != null) {
            appender.close();
            appender = null;
        }
        if (where.equals("off")) {
            return;
        }
        File dir = where.equals("tmpfs") ? new File("/dev/shm/exalt-namenode-log") : new File(base, "namenode-log");
        if (!dir.isDirectory() && !dir.mkdirs()) {
            throw new IOException("cannot create NameNode log directory " + dir);
        }
        appender = new FileAppender(new PatternLayout("%d{ISO8601} %p %c{2}: %m%n"), new File(dir, "namenode.log").getPath(), true);
        for (String l : LOGGERS) {
            Logger lg = Logger.getLogger(l);
            lg.setLevel(Level.INFO);
            lg.addAppender(appender);
            lg.setAdditivity(false);
        }
        System.out.println("   NameNode INFO/state-change/audit log -> " + new File(dir, "namenode.log")
                + (where.equals("disk") ? " (same disk as the edit log)" : " (tmpfs)"));
    }
}
