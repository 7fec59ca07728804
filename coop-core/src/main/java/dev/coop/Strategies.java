package dev.coop;

import dev.coop.failure.CoopValidationException;
import dev.coop.failure.Failure;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;

/** The built-in {@link CooperationStrategy strategies}. */
public final class Strategies {
    private static final CooperationStrategy STANDARD = new CooperationStrategy() {
        @Override
        public String toString() {
            return "standard";
        }
    };

    private Strategies() {
    }

    /**
     * Start every run; wait for every child (the topology registry says whom); give up on a cancellation or a missed
     * deadline.
     */
    public static CooperationStrategy standard() {
        return STANDARD;
    }

    /**
     * A "train schedule": a run waits for the children that start within {@code window} after its step
     * committed, then only for those to finish; children whose engines did not pick them up in time (a service that
     * is down) still run later, but nobody waits for them. Otherwise {@code base}.
     *
     * <p>
     * Children nobody waits for are fire-and-forget: their failures do not reach the parent, and one that commits
     * after the parent's rollback passed its step is not compensated.
     */
    public static CooperationStrategy timeWindow(Duration window, CooperationStrategy base) {
        Objects.requireNonNull(window, "window");
        Objects.requireNonNull(base, "base");
        if (window.isNegative()) {
            throw new CoopValidationException("A time window cannot be negative: " + window);
        }
        return new Delegating(base) {
            @Override
            public BarrierDecision resumeHappyPath(Barrier barrier) {
                if (barrier.notStarted() == 0) {
                    return base.resumeHappyPath(barrier);
                }
                Instant end = barrier.since().plus(window);
                return barrier.run().now().isBefore(end)
                        ? BarrierDecision.waitUntil(end)
                        : BarrierDecision.STOP_WAITING_FOR_UNSTARTED;
            }

            @Override
            public String toString() {
                return "timeWindow(" + window + ", " + base + ")";
            }
        };
    }

    /** {@link #timeWindow(Duration, CooperationStrategy)} over the standard strategy. */
    public static CooperationStrategy timeWindow(Duration window) {
        return timeWindow(window, STANDARD);
    }

    /**
     * A start rule: runs of hierarchies launched before {@code cutoff} are not started (parked, saying why), e.g. to
     * skip a backlog after an outage. Only roots are judged: a child always starts, because its parent is waiting
     * for it, so hierarchies already in flight are never stranded. Otherwise {@code base}.
     */
    public static CooperationStrategy ignoringHierarchiesOlderThan(Instant cutoff, CooperationStrategy base) {
        Objects.requireNonNull(cutoff, "cutoff");
        Objects.requireNonNull(base, "base");
        return new Delegating(base) {
            @Override
            public StartDecision start(RunFacts run) {
                if (run.root() && !run.started() && run.messageCreatedAt().isBefore(cutoff)) {
                    return StartDecision.ignore("Message " + run.message() + " was launched at "
                            + run.messageCreatedAt() + ", before the cut-off " + cutoff + " of saga " + run.saga()
                            + "'s start rule");
                }
                return base.start(run);
            }

            @Override
            public String toString() {
                return "ignoringHierarchiesOlderThan(" + cutoff + ", " + base + ")";
            }
        };
    }

    /** A strategy that asks {@code base} for everything; override what changes. */
    public abstract static class Delegating implements CooperationStrategy {
        private final CooperationStrategy base;

        protected Delegating(CooperationStrategy base) {
            this.base = Objects.requireNonNull(base, "base");
        }

        @Override
        public StartDecision start(RunFacts run) {
            return base.start(run);
        }

        @Override
        public BarrierDecision resumeHappyPath(Barrier barrier) {
            return base.resumeHappyPath(barrier);
        }

        @Override
        public Optional<Failure> giveUpOnHappyPath(RunFacts run) {
            return base.giveUpOnHappyPath(run);
        }

        @Override
        public BarrierDecision resumeRollbackPath(Barrier barrier) {
            return base.resumeRollbackPath(barrier);
        }

        @Override
        public Optional<Failure> giveUpOnRollbackPath(RunFacts run) {
            return base.giveUpOnRollbackPath(run);
        }
    }
}
