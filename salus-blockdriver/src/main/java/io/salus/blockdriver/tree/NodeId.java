package io.salus.blockdriver.tree;

/**
 * A node of the volume tree: {@code level} 0 is a block's leaf hash ({@code index} = block
 * number), level {@code h} with {@code index} {@code s} is the root of subtree {@code s} when
 * the subtree height is {@code h}.
 */
public record NodeId(int level, long index) {
  public NodeId {
    if (level < 0 || level > 63 || index < 0) {
      throw new IllegalArgumentException("bad tree node (" + level + ", " + index + ")");
    }
  }
}
