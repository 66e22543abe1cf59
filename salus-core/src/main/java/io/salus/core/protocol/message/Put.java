package io.salus.core.protocol.message;

import io.salus.core.merkle.Hash;
import java.util.Arrays;

/**
 * One client PUT: sequence number, prevNum (seq of the previous PUT to the same region, 0 if none),
 * block number, data, the data checksum (its leaf hash), and the client's volume root after
 * applying this PUT (kept by the region for the mount protocol).
 */
public record Put(long seq, long prevNum, long block, byte[] data, Hash dataHash, Hash volumeRoot) {
    @Override
    public boolean equals(Object o) {
        return o instanceof Put p && p.seq == seq && p.prevNum == prevNum && p.block == block
                && Arrays.equals(p.data, data) && p.dataHash.equals(dataHash) && p.volumeRoot.equals(volumeRoot);
    }

    @Override
    public int hashCode() {
        return Long.hashCode(seq) * 31 + Long.hashCode(block);
    }

    @Override
    public String toString() {
        return "Put[seq=" + seq + ",prev=" + prevNum + ",block=" + block + "]";
    }
}
