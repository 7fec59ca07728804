package dev.coop.dashboard.internal;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * Failed logins, counted per user name and per client address. After {@link #PER_USER} failures for a name,
 * further passwords for it are refused without checking them; after {@link #PER_ADDRESS} failures from an address,
 * its failing credentials are answered 429 (valid ones pass: an address may be a proxy's, shared by every operator).
 * Each lock lasts one second, then twice as long after each further failure, up to {@link #MAX_LOCK}; a successful
 * login clears the name's and the address's count. Bounded: the least recently used of more than {@link #TRACKED} names or addresses are forgotten.
 */
public final class LoginThrottle {
    public static final int PER_USER = 5;
    public static final int PER_ADDRESS = 20;
    public static final Duration MAX_LOCK = Duration.ofMinutes(15);
    static final int TRACKED = 10_000;

    private record Failures(int count, long lockedUntil) {
    }

    private final Map<String, Failures> failures = new LinkedHashMap<>(256, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Failures> eldest) {
            return size() > TRACKED;
        }
    };
    private final LongSupplier nanoTime;

    public LoginThrottle() {
        this(System::nanoTime);
    }

    LoginThrottle(LongSupplier nanoTime) {
        this.nanoTime = nanoTime;
    }

    /** How long this user (null: unknown) from this address must wait before trying again; zero when it may try. */
    public synchronized Duration wait(String user, String address) {
        return Duration.ofNanos(Math.max(userWait(user).toNanos(), addressWait(address).toNanos()));
    }

    /**
     * How long a password for this user (null: none) must wait before it is checked at all: the lock that keeps a
     * guesser from trying one name's password faster, from any address.
     */
    public synchronized Duration userWait(String user) {
        if (user == null) {
            return Duration.ZERO;
        }
        long now = nanoTime.getAsLong();
        return Duration.ofNanos(Math.max(0, lockedUntil("u:" + user, now) - now));
    }

    /**
     * How long this address is locked: its failing credentials are answered 429 until then. Valid ones pass: behind
     * a proxy, every operator shares the address of the one who mistyped.
     */
    public synchronized Duration addressWait(String address) {
        long now = nanoTime.getAsLong();
        return Duration.ofNanos(Math.max(0, lockedUntil("a:" + address, now) - now));
    }

    public synchronized void failed(String user, String address) {
        long now = nanoTime.getAsLong();
        count("a:" + address, PER_ADDRESS, now);
        if (user != null) {
            count("u:" + user, PER_USER, now);
        }
    }

    public synchronized void succeeded(String user, String address) {
        failures.remove("a:" + address);
        if (user != null) {
            failures.remove("u:" + user);
        }
    }

    private long lockedUntil(String key, long now) {
        Failures f = failures.get(key);
        return f == null ? now : f.lockedUntil();
    }

    private void count(String key, int allowed, long now) {
        Failures f = failures.get(key);
        int count = f == null ? 1 : f.count() + 1;
        long until = now;
        if (count >= allowed) {
            int doublings = Math.min(count - allowed, 20);
            until = now + Math.min(Duration.ofSeconds(1).toNanos() << doublings, MAX_LOCK.toNanos());
        }
        failures.put(key, new Failures(count, until));
    }
}
