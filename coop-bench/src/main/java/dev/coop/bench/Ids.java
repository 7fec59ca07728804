package dev.coop.bench;

import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;

/** UUID version 7 (time-ordered), as Coop writes them, for the reference table. */
final class Ids {
    private Ids() {
    }

    static UUID v7() {
        ThreadLocalRandom r = ThreadLocalRandom.current();
        long msb = (System.currentTimeMillis() << 16) | 0x7000L | (r.nextInt() & 0x0FFFL);
        long lsb = (r.nextLong() & 0x3FFFFFFFFFFFFFFFL) | 0x8000000000000000L;
        return new UUID(msb, lsb);
    }
}
