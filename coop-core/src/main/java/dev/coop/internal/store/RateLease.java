package dev.coop.internal.store;

import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Rate tokens of a saga that this engine moved ahead to {@link #until()} in one committed statement (a lease): each
 * may stand for one step start at or before {@code until}, checked by the claim against the database's time. A start
 * of the lease falls within [the reservation's time, {@code until}], and each of its tokens is next free a period
 * after {@code until}: the window stays exact. Tokens not used in time are under-use, never excess.
 */
public final class RateLease {
    /** Leases only for windows of at least this many tokens per token leased (small windows keep a token a start). */
    static final int TOKENS_PER_LEASED = 64;
    /** At most this many tokens leased at once. */
    static final int MAX_LEASED = 16;
    /** How long a lease lasts, at most (and at most a tenth of the period). */
    static final Duration MAX_LENGTH = Duration.ofMillis(100);

    private final OffsetDateTime until;
    private final long expiresNanos;
    private final AtomicInteger left;
    private final boolean empty;

    /**
     * @param tokens how many tokens the reservation moved
     * @param until the time they were moved to (the database's)
     * @param reservedNanos when the reservation was sent ({@link System#nanoTime()})
     * @param lengthMillis the lease's length: it is used locally for three quarters of it, the rest a margin
     */
    RateLease(int tokens, OffsetDateTime until, long reservedNanos, long lengthMillis) {
        this.until = until;
        this.expiresNanos = reservedNanos + TimeUnit.MILLISECONDS.toNanos(lengthMillis * 3 / 4);
        this.left = new AtomicInteger(tokens);
        this.empty = tokens == 0;
    }

    /** How many tokens to lease for a rate limit of {@code n} starts (fewer than 2: none). */
    public static int size(int n) {
        return Math.min(MAX_LEASED, n / TOKENS_PER_LEASED);
    }

    /** How long a lease of a rate limit per {@code periodMillis} lasts. */
    static long lengthMillis(long periodMillis) {
        return Math.max(1, Math.min(MAX_LENGTH.toMillis(), periodMillis / 10));
    }

    OffsetDateTime until() {
        return until;
    }

    /**
     * Whether to lease anew: this lease ran out (locally; the claim checks the database's time), or its tokens are
     * used up. A reservation that found no free token is kept as an empty lease until it runs out, so that a limit
     * that binds is not asked for a lease at every claim.
     */
    public boolean spent() {
        return System.nanoTime() - expiresNanos >= 0 || left.get() <= 0 && !empty;
    }

    /** Takes a token for a claim, or returns false. */
    public boolean take() {
        return System.nanoTime() - expiresNanos < 0 && left.getAndUpdate(n -> n > 0 ? n - 1 : n) > 0;
    }

    /** Gives back a token taken by a claim that started no step (it found no run, or its limits refused it). */
    public void giveBack() {
        left.incrementAndGet();
    }
}
