package dev.coop.internal.store;

import dev.coop.RunStatus;
import java.time.OffsetDateTime;

/**
 * The state a run moves to at the end of a transaction. Built from the claimed state with {@link #from} and the
 * fluent setters, so that each transition names only what it changes. Each setter returns this object.
 */
public final class Advance {
    /**
     * What an executed instance that was not the last step binds as the final step: the empty name clears one that an
     * earlier instance set (a last step's child-failure handler that went back to an earlier step), so that the
     * count-off of that step's children does not commit the run; null keeps it.
     */
    public static final String NOT_FINAL = "";

    private RunStatus status = RunStatus.RUNNABLE;
    private boolean rollback;
    private int stepIndex;
    private String nextStep;
    private String finalStep;
    private int stepsDone;
    private StepHistory history;
    private Integer instance;
    private int instanceSeq;
    private int instanceIteration;
    private int[] iterations;
    private int attempt;
    private int pendingChildren;
    private Integer rollbackSeq;
    private String rollbackStage;
    private String rollbackCause;
    private long delayMillis;
    private OffsetDateTime runnableAt;
    private String failure;
    private boolean checkCancellation;
    private String context;
    private String result;
    private Integer finallyDone;
    private boolean keepFailedChildren;

    private Advance() {
    }

    /** The run as claimed, unchanged apart from counters that every transaction resets. */
    public static Advance from(ClaimedRun run) {
        Advance a = new Advance();
        a.rollback = run.rollback();
        a.stepIndex = run.stepIndex();
        a.nextStep = run.nextStep();
        a.stepsDone = run.stepsDone();
        a.history = run.history();
        a.attempt = run.attempt();
        a.rollbackSeq = run.rollbackSeq();
        a.rollbackStage = run.rollbackStage();
        a.rollbackCause = run.rollbackCause();
        a.context = run.context();
        return a;
    }

    public Advance status(RunStatus s) {
        status = s;
        return this;
    }

    /**
     * A completed step or handler instance: recorded (carried by its SUSPENDED event, the step's count), counted, children
     * to wait for.
     */
    public Advance executed(int instance, int nextStepIndex, String nextStepName, String finalStepName, int children) {
        stepIndex = nextStepIndex;
        nextStep = nextStepName;
        finalStep = finalStepName == null ? NOT_FINAL : finalStepName;
        this.instance = instance;
        instanceSeq = stepsDone;
        if (instance >= 0) {
            iterations = history.afterInstance(instance);
            instanceIteration = iterations[instance];
        } else { // a handler run: the execution of its step that it handled
            instanceIteration = Math.max(1, history.executions(-1 - instance));
        }
        stepsDone++;
        attempt = 1;
        pendingChildren = children;
        checkCancellation = true;
        return this;
    }

    public Advance attempt(int a, long delay, String lastFailure) {
        attempt = a;
        delayMillis = delay;
        failure = lastFailure;
        return this;
    }

    public Advance failure(String f) {
        failure = f;
        return this;
    }

    /** Fail the update (SQLSTATE CP001) if the run's scope was cancelled meanwhile. */
    public Advance checkingCancellation() {
        checkCancellation = true;
        return this;
    }

    /** On the rollback path, at instance {@code seq}, stage {@code stage}, waiting for {@code children}. */
    public Advance rollingBack(int seq, String stage, String cause, int children) {
        rollback = true;
        pendingChildren = children;
        rollbackSeq = seq;
        rollbackStage = stage;
        rollbackCause = cause;
        checkCancellation = false;
        return this;
    }

    /** The run may be claimed again no earlier than {@code at} (null: as the delay says). */
    public Advance runnableAt(OffsetDateTime at) {
        runnableAt = at;
        return this;
    }

    /** The run's cooperation context from now on (JSON text, null when empty). */
    public Advance context(String json) {
        context = json;
        return this;
    }

    /** The run's result from now on (null keeps the present one). */
    public Advance result(String json) {
        result = json;
        return this;
    }

    /** Records that the finally part of step {@code index} ran. */
    public Advance finallyDone(int index) {
        finallyDone = index;
        return this;
    }

    /**
     * Whether the run stays runnable now (no wait, no delay): its advance sets neither status nor due time, and in a
     * round it can wait for the round's end.
     */
    public boolean isQuietAlone() {
        return status == RunStatus.RUNNABLE && runnableAt == null && delayMillis == 0;
    }

    public RunStatus status() {
        return status;
    }

    public boolean rollback() {
        return rollback;
    }

    public int stepIndex() {
        return stepIndex;
    }

    public String nextStep() {
        return nextStep;
    }

    /** The last step, once it ran (its COMMITTED still to write); {@link #NOT_FINAL} clears it; null keeps it. */
    public String finalStep() {
        return finalStep;
    }

    public int stepsDone() {
        return stepsDone;
    }

    /** The instance executed, or null when none was. */
    public Integer instance() {
        return instance;
    }

    public int instanceSeq() {
        return instanceSeq;
    }

    public int instanceIteration() {
        return instanceIteration;
    }

    /** The run's new counts per step, or null when unchanged. */
    public int[] iterations() {
        return iterations;
    }

    public int attempt() {
        return attempt;
    }

    public int pendingChildren() {
        return pendingChildren;
    }

    public Integer rollbackSeq() {
        return rollbackSeq;
    }

    public String rollbackStage() {
        return rollbackStage;
    }

    public String rollbackCause() {
        return rollbackCause;
    }

    public long delayMillis() {
        return delayMillis;
    }

    public OffsetDateTime runnableAt() {
        return runnableAt;
    }

    public String failure() {
        return failure;
    }

    public boolean checkCancellation() {
        return checkCancellation;
    }

    public String context() {
        return context;
    }

    public String result() {
        return result;
    }

    /** A barrier re-check: the run keeps waiting, so the failures counted so far are kept. */
    public Advance stillWaiting(int pending) {
        pendingChildren = pending;
        keepFailedChildren = true;
        return this;
    }

    /** How many children the run waits for. */
    public Advance pending(int children) {
        pendingChildren = children;
        return this;
    }

    public boolean keepFailedChildren() {
        return keepFailedChildren;
    }

    public Integer finallyDone() {
        return finallyDone;
    }
}
