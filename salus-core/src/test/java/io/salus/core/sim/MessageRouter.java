package io.salus.core.sim;

import io.salus.core.cert.Certificate;
import io.salus.core.protocol.message.Message;
import io.salus.core.protocol.message.Put;
import io.salus.core.protocol.message.SubBatch;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * The simulated network: every message passes the filters, driven by the scenario's single seeded
 * {@link Random}: drop, duplicate, corrupt, and a random delay (which also reorders).
 */
final class MessageRouter {
    double drop;
    double duplicate;
    double corrupt;
    int maxDelay;
    private final Random rnd;
    long dropped;
    long corrupted;
    long duplicated;

    MessageRouter(Random rnd) {
        this.rnd = rnd;
    }

    void heal() {
        drop = 0;
        duplicate = 0;
        corrupt = 0;
        maxDelay = Math.min(maxDelay, 5);
    }

    interface Deliver {
        void at(long delay, Message m);
    }

    void route(Message m, Deliver d) {
        if (rnd.nextDouble() < drop) {
            dropped++;
            return;
        }
        int copies = rnd.nextDouble() < duplicate ? 2 : 1;
        if (copies == 2) {
            duplicated++;
        }
        for (int i = 0; i < copies; i++) {
            Message out = m;
            if (rnd.nextDouble() < corrupt) {
                corrupted++;
                out = corrupt(m);
                if (out == null) {
                    continue; // undecodable after corruption: the receiver discards it
                }
            }
            d.at(1 + rnd.nextInt(Math.max(1, maxDelay)), out);
        }
    }

    private Certificate corruptCert(Certificate c) {
        byte[] b = c.encode();
        b[rnd.nextInt(b.length)] ^= (byte) (1 << rnd.nextInt(8));
        try {
            return Certificate.decode(b);
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    private Message corrupt(Message m) {
        if (m instanceof Message.SubBatchMsg s) {
            SubBatch sb = s.subBatch();
            List<Put> puts = new ArrayList<>(sb.puts());
            int i = rnd.nextInt(puts.size());
            Put p = puts.get(i);
            if (rnd.nextBoolean()) {
                byte[] d = p.data().clone();
                d[rnd.nextInt(d.length)] ^= 1;
                puts.set(i, new Put(p.seq(), p.prevNum(), p.block(), d, p.dataHash(), p.volumeRoot()));
            } else {
                puts.set(i, new Put(p.seq(), p.prevNum() + 1, p.block(), p.data(), p.dataHash(), p.volumeRoot()));
            }
            return new Message.SubBatchMsg(new SubBatch(sb.volume(), sb.region(), sb.batchId(), sb.leaderRegion(),
                    puts, sb.clientSig()));
        } else if (m instanceof Message.LogCertMsg l) {
            Certificate c = corruptCert(l.tentative());
            return c == null ? null : new Message.LogCertMsg(c);
        } else if (m instanceof Message.DecisionMsg d) {
            Certificate c = corruptCert(d.tentative());
            return c == null ? null : new Message.DecisionMsg(c);
        } else if (m instanceof Message.PutReply p) {
            Certificate c = corruptCert(p.tentative());
            return c == null ? null : new Message.PutReply(c);
        } else if (m instanceof Message.CheckpointVote v) {
            Certificate c = corruptCert(v.tentative());
            return c == null ? null : new Message.CheckpointVote(c);
        } else if (m instanceof Message.CheckpointCert v) {
            Certificate c = corruptCert(v.checkpoint());
            return c == null ? null : new Message.CheckpointCert(c);
        } else if (m instanceof Message.StoreAck a) {
            return new Message.StoreAck(a.region(), a.generation(), a.index() + 1, a.digest(), a.signature());
        } else if (m instanceof Message.ChainAck a) {
            // a digest that is not the entry's: the predecessor must keep resending the payload
            return new Message.ChainAck(a.region(), a.generation(), a.index(),
                    io.salus.core.merkle.HashAlgorithm.SHA256.hash(a.digest().toString().getBytes()));
        } else if (m instanceof Message.Vote v) {
            return new Message.Vote(v.batchId(), v.region(), v.generation(), !v.yes(), v.signature());
        } else if (m instanceof Message.BatchInfoMsg b) {
            var i = b.info();
            return new Message.BatchInfoMsg(new io.salus.core.protocol.message.BatchInfo(i.volume(), i.batchId(),
                    i.firstSeq(), i.lastSeq(), i.participants(), i.prevBatchId() - 1, i.prevLeaderRegion(),
                    i.clientSig()));
        } else if (m instanceof Message.GetReply g) {
            byte[] d = g.data().clone();
            d[rnd.nextInt(d.length)] ^= 1;
            return new Message.GetReply(g.requestId(), g.block(), d, g.appliedSeq(), g.proof());
        } else if (m instanceof Message.GetRequest g) {
            return new Message.GetRequest(g.requestId(), g.block(), Math.max(0, g.prevNum() - 1));
        }
        return m; // DecisionRequest, CheckpointPropose: unauthenticated hints, corruption is harmless
    }
}
