package dev.coop.inspect;

import dev.coop.MessageId;

import dev.coop.failure.Failure;

import java.time.OffsetDateTime;
import java.util.List;

/**
 * One executed transaction of a run, as the log records it.
 *
 * @param name the step name as logged (rollback sub-steps read {@code Rollback of <step>...})
 * @param engine the engine instance that executed it
 * @param startedAt when its transaction started its work (null when the log does not say)
 * @param endedAt when it committed, or when its failure was recorded
 * @param launched the messages it launched; when its run's children were counted instead of listed (see
 *        {@link RunView#collapsed()}), only those whose runs are listed
 * @param failure what it failed with, or null
 * @param iteration which execution of the step this was (loops run a step more than once), starting at 1; for
 *        rollback transactions, the iteration they undo
 * @param launchedCount how many messages it launched: {@code launched.size()}, or more when its run's children were
 *        counted (then: the messages some saga handled)
 */
public record StepView(String name, Kind kind, String engine, OffsetDateTime startedAt, OffsetDateTime endedAt,
        List<MessageId> launched, Failure failure, int iteration, int launchedCount) {

    public StepView {
        launched = List.copyOf(launched);
        launchedCount = Math.max(launchedCount, launched.size());
    }

    /** A transaction whose launched messages are all listed. */
    public StepView(String name, Kind kind, String engine, OffsetDateTime startedAt, OffsetDateTime endedAt,
            List<MessageId> launched, Failure failure, int iteration) {
        this(name, kind, engine, startedAt, endedAt, launched, failure, iteration, launched.size());
    }

    /** A transaction of a step that ran once. */
    public StepView(String name, Kind kind, String engine, OffsetDateTime startedAt, OffsetDateTime endedAt,
            List<MessageId> launched, Failure failure) {
        this(name, kind, engine, startedAt, endedAt, launched, failure, 1);
    }

    /** What kind of transaction it was. */
    public enum Kind {
        /** A step of the saga. */
        STEP,
        /** The step's child-failure handler, run because runs it caused failed. */
        CHILD_FAILURE_HANDLER,
        /** Rolling back: asking the runs an instance caused to roll back. */
        ROLLBACK_CHILDREN,
        /** Rolling back: the step's compensation. */
        COMPENSATION
    }
}
