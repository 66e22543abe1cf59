/**
 * ZooKeeper-backed implementations of the protocol's coordination seams (Curator). The protocol
 * packages ({@code io.salus.core.protocol}) never import ZooKeeper or Curator; this package does.
 */
package io.salus.core.zk;
