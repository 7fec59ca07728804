package dev.coop;

import dev.coop.failure.AbsoluteDeadlineMissedException;
import dev.coop.failure.HappyPathDeadlineMissedException;
import dev.coop.failure.RollbackPathDeadlineMissedException;
import dev.coop.failure.Failure;

import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

/**
 * What a {@link CooperationStrategy} knows about a run when it decides.
 *
 * @param root whether the run handles a message launched on the global scope (it has no parent run)
 * @param started whether the run executed anything yet
 * @param nextStep the step it would execute next (null when only its commit or rollback is left)
 * @param messageCreatedAt when its message was launched
 * @param now the engine's time at the claim (the database's clock unless a {@link TimeSource} is given)
 * @param cancellation the cancellation of its scope (or one above), if any
 */
public record RunFacts(UUID runId, String saga, MessageId message, Lineage lineage, boolean root, boolean started,
        String nextStep, Instant messageCreatedAt, Instant now, CooperationContext context,
        Optional<Failure> cancellation) {

    /**
     * The deadline of the path (happy or rollback; the absolute one applies to both) when it passed, as a
     * {@link dev.coop.failure.DeadlineMissedException} failure naming it, its source and its trace. Its type says which
     * deadline it was: {@link HappyPathDeadlineMissedException}, {@link RollbackPathDeadlineMissedException} or
     * {@link AbsoluteDeadlineMissedException}.
     */
    public Optional<Failure> missedDeadline(boolean rollbackPath) {
        Deadline d = Deadlines.applying(context, rollbackPath).orElse(null);
        if (d == null || now.isBefore(d.at())) {
            return Optional.empty();
        }
        boolean absolute = context.get(rollbackPath ? Deadlines.ROLLBACK_PATH : Deadlines.HAPPY_PATH)
                .map(path -> !path.equals(d)).orElse(true);
        String type = absolute
                ? AbsoluteDeadlineMissedException.TYPE
                : rollbackPath ? RollbackPathDeadlineMissedException.TYPE : HappyPathDeadlineMissedException.TYPE;
        String kind = absolute ? "Absolute" : rollbackPath ? "Rollback" : "Happy-path";
        return Optional.of(new Failure(kind + " deadline " + d.describe() + " passed at " + now, type, saga,
                List.of(), List.of()));
    }
}
