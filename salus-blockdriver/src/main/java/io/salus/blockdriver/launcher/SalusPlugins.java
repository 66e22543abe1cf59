package io.salus.blockdriver.launcher;

import org.apache.hadoop.conf.Configuration;

/**
 * The Salus plugins the embedded cluster loads into stock HDFS and HBase, in one place so that
 * the README's configuration reference and the launcher cannot drift apart.
 */
final class SalusPlugins {
  private SalusPlugins() {}

  /** HDFS side: placement policy and DataNode witness plugin (salus-hdfs). */
  static void configureHdfs(Configuration conf, DataDirLayout layout) {
    // filled in as salus-hdfs plugins land
  }

  /** HBase side: coprocessors and balancer (salus-core's HBase adapters). */
  static void configureHBase(Configuration conf) {
    // filled in as salus-core's HBase adapters land
  }
}
