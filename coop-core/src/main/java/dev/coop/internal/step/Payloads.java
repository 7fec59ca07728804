package dev.coop.internal.step;

import dev.coop.internal.store.ClaimedRun;

import dev.coop.failure.CoopValidationException;
import dev.coop.Saga;

/**
 * A run's payload read as its saga's type, for a worker: it remembers the text it read last without failing, so that
 * a continuation's steps (the reclaim passes the claim's text on) read it only when they ask.
 */
final class Payloads {
    private final EngineContext engine;
    /** The payload text this worker read last without failing (compared by identity). */
    private String readable;

    Payloads(EngineContext engine) {
        this.engine = engine;
    }

    /** Reads the run's payload as the saga's type; a {@link CoopValidationException} says why it cannot. */
    <P> P payload(ClaimedRun run, Saga<P> saga) {
        try {
            P payload = engine.json().readPayload(run.payload(), saga.topic().payloadType());
            readable = run.payload();
            return payload;
        } catch (Exception e) {
            throw new CoopValidationException("Payload of message " + run.messageId() + " on topic '" + run.topic()
                    + "' cannot be read as " + saga.topic().payloadType().getName() + ": " + e.getMessage(), e);
        }
    }

    /**
     * The run's payload for a step: read now when this worker has not read this very text (the claim's, by identity:
     * a continuation's reclaim passes it on), so that a payload that cannot be read fails the step before it runs;
     * otherwise read when the step asks for it (it was read before, so it can be read again), each step its own copy.
     */
    <P> java.util.function.Supplier<P> stepPayload(ClaimedRun run, Saga<P> saga) {
        if (run.payload() != null && run.payload() == readable) {
            return () -> payload(run, saga);
        }
        P payload = payload(run, saga);
        return () -> payload;
    }
}
