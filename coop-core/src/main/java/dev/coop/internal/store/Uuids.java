package dev.coop.internal.store;

import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;

/** UUID version 7: Unix milliseconds in the top 48 bits, random below; sorts by creation time. */
public final class Uuids {
    private Uuids() {
    }

    public static UUID v7() {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        long millis = System.currentTimeMillis();
        long msb = (millis << 16) | 0x7000L | (random.nextLong() & 0x0FFFL);
        long lsb = (random.nextLong() & 0x3FFF_FFFF_FFFF_FFFFL) | 0x8000_0000_0000_0000L;
        return new UUID(msb, lsb);
    }
}
