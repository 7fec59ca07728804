package dev.coop;

import java.time.Instant;
import java.util.Objects;

/** What a run waiting for its children does; see {@link CooperationStrategy#resumeHappyPath}. */
public sealed interface BarrierDecision {
    /** Wait until every awaited child finished. */
    BarrierDecision WAIT = new Wait();
    /**
     * Stop waiting for the children that have not started yet (they still run, later, but the run no longer waits
     * for them, nor sees their failures); wait for the started ones to finish.
     */
    BarrierDecision STOP_WAITING_FOR_UNSTARTED = new StopWaitingForUnstarted();

    /** Keep waiting, and ask again at {@code at} if some children are still running then. */
    static BarrierDecision waitUntil(Instant at) {
        return new WaitUntil(at);
    }

    record Wait() implements BarrierDecision {
    }

    record StopWaitingForUnstarted() implements BarrierDecision {
    }

    record WaitUntil(Instant at) implements BarrierDecision {
        public WaitUntil {
            Objects.requireNonNull(at, "at");
        }
    }
}
