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
 * @param attempt for {@link Kind#ATTEMPT_FAILED} and {@link Kind#PARKED}: which attempt of the step; 0 otherwise
 */
public record StepView(String name, Kind kind, String engine, OffsetDateTime startedAt, OffsetDateTime endedAt,
        List<MessageId> launched, Failure failure, int iteration, int launchedCount, int attempt) {

    public StepView {
        launched = List.copyOf(launched);
        launchedCount = Math.max(launchedCount, launched.size());
    }

    /** A transaction that is not about an attempt of a step. */
    public StepView(String name, Kind kind, String engine, OffsetDateTime startedAt, OffsetDateTime endedAt,
            List<MessageId> launched, Failure failure, int iteration, int launchedCount) {
        this(name, kind, engine, startedAt, endedAt, launched, failure, iteration, launchedCount, 0);
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
        COMPENSATION,
        /**
         * An attempt of the step that failed and that its retry policy ran again (nothing of it committed). A step's
         * first attempts are listed each; past them, one entry stands for the latest (its {@code attempt} says which).
         */
        ATTEMPT_FAILED,
        /** The run stopped at the step for an operator ({@code failure}: why). */
        PARKED,
        /** An operator let the parked run run the step again, from attempt 1. */
        RETRIED,
        /** An operator marked the parked run's step done without running it. */
        MARKED_DONE
    }
}
