package dev.coop.internal.client;

import dev.coop.MessageId;
import dev.coop.RunStatus;
import dev.coop.failure.CoopException;
import dev.coop.failure.CoopStoreException;
import dev.coop.failure.CoopTimeoutException;
import dev.coop.inspect.Outcome;
import dev.coop.internal.Completions;
import dev.coop.internal.read.Unfinished;
import dev.coop.internal.store.InputLimits;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * Waits until every run of a message finished: told by the engine this client belongs to when its runs finish
 * here, and reading the database with a backoff for runs that finish elsewhere.
 */
public final class CompletionWait {
    private static final long MAX_CHECK_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
    /** An engine's client is signalled when its own runs finish; it polls only for runs finished elsewhere. */
    private static final long FIRST_PAUSE_SIGNALLED_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
    /**
     * An engine's client re-checks the database only as a backstop, for runs that finish in other engines: every
     * pool connection a waiting client borrows is one the engine's workers cannot use.
     */
    private static final long MAX_CHECK_PAUSE_SIGNALLED_NANOS = TimeUnit.MILLISECONDS.toNanos(250);

    private final ClientContext client;
    private final Reads reads;
    private final Unfinished unfinished;
    private final Completions completions;
    /** Whether this client learns the outcome of messages it launched from the engine it belongs to. */
    private final boolean inProcessOutcomes;
    private final long firstPauseNanos;
    private final long maxPauseNanos;

    public CompletionWait(ClientContext client, Reads reads, Completions completions,
            boolean signalled) {
        this.client = client;
        this.reads = reads;
        this.unfinished = new Unfinished(client.schema());
        this.completions = completions;
        this.inProcessOutcomes = signalled;
        this.firstPauseNanos = signalled ? FIRST_PAUSE_SIGNALLED_NANOS : TimeUnit.MILLISECONDS.toNanos(1);
        this.maxPauseNanos = signalled ? MAX_CHECK_PAUSE_SIGNALLED_NANOS : MAX_CHECK_PAUSE_NANOS;
    }

    /** Waits until every run of the message finished, at most {@code timeout}. */
    public Outcome await(MessageId message, Duration timeout) {
        Objects.requireNonNull(message, "message");
        long deadline = System.nanoTime() + InputLimits.timeoutNanos(Objects.requireNonNull(timeout, "timeout"));
        UUID id = message.value();
        // launched by this client and its runs all run here: the first look is the completion signal's, not a read
        boolean tracked = inProcessOutcomes && completions.tracks(id);
        try (Completions.Waiter waiter = completions.watch(id)) {
            return new Wait(message, timeout, deadline, tracked).until(waiter);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CoopException("Interrupted while waiting for message " + message, e);
        }
    }

    /** One wait for one message. */
    private final class Wait {
        private final MessageId message;
        private final Duration timeout;
        private final long deadline;
        private final boolean tracked;
        /** Why the database could not be read at the last look, if it could not. */
        private CoopStoreException trouble;

        Wait(MessageId message, Duration timeout, long deadline, boolean tracked) {
            this.message = message;
            this.timeout = timeout;
            this.deadline = deadline;
            this.tracked = tracked;
        }

        Outcome until(Completions.Waiter waiter) throws InterruptedException {
            UUID id = message.value();
            long pause = firstPauseNanos;
            boolean local = tracked;
            while (true) {
                long seen = waiter.version();
                List<RunStatus> statuses = tracked ? completions.outcome(id) : null;
                if (statuses == null && !local) {
                    statuses = read();
                }
                local = false; // after the first wait, read the database too (runs may finish in other engines)
                if (statuses != null && statuses.stream().allMatch(RunStatus::isFinished)) {
                    completions.untrack(id);
                    return Outcome.of(statuses);
                }
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw timedOut();
                }
                waiter.await(seen, Math.min(pause, left));
                pause = Math.min(pause * 2, maxPauseNanos);
            }
        }

        /** The statuses in the database, or null when it is away (a restart, say): then the wait goes on. */
        private List<RunStatus> read() {
            try {
                List<RunStatus> statuses = reads.statuses(message);
                trouble = null;
                return statuses;
            } catch (CoopStoreException e) {
                trouble = e;
                return null;
            }
        }

        private CoopTimeoutException timedOut() {
            String why;
            if (trouble != null) {
                why = "the database could not be read (" + trouble.getMessage() + ")";
            } else {
                try (Connection c = client.dataSource().getConnection()) {
                    why = unfinished.whyUnfinished(c, message);
                } catch (SQLException | RuntimeException e) {
                    why = "its runs are still running";
                }
            }
            CoopTimeoutException e = new CoopTimeoutException(
                    "Message " + message + " did not finish within " + timeout + ": " + why);
            if (trouble != null) {
                e.initCause(trouble);
            }
            return e;
        }
    }
}
