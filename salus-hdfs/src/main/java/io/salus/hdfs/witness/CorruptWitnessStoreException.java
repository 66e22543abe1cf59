package io.salus.hdfs.witness;

import java.io.IOException;
import java.nio.file.Path;

/**
 * A witness journal holds a damaged record that is not a torn tail: acknowledged certificates may be
 * affected, so the store refuses to open. The message names the file, the byte offset and the fix.
 */
public class CorruptWitnessStoreException extends IOException {
  private final Path segment;
  private final long offset;

  public CorruptWitnessStoreException(Path segment, long offset, String reason) {
    super("witness journal " + segment + " is corrupt at byte offset " + offset + ": " + reason
        + ". This is not a torn tail (the damaged record is complete or valid data follows it), so"
        + " acknowledged certificates may be affected and the store refuses to start. Fix: restore"
        + " this witness from its peers (stop it, move the directory away, start it empty) or run"
        + " `salus witness --dir " + segment.getParent() + " --repair` to quarantine the damaged"
        + " bytes into a .corrupt file and serve the rest.");
    this.segment = segment;
    this.offset = offset;
  }

  public Path segment() {
    return segment;
  }

  public long offset() {
    return offset;
  }
}
