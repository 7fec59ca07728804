package dev.coop.internal.task;

import dev.coop.internal.join.JoinBook;
import dev.coop.internal.store.Json;
import dev.coop.internal.store.InputLimits;
import dev.coop.internal.store.SchemaName;
import dev.coop.internal.store.Store;
import dev.coop.internal.store.Counted;
import dev.coop.internal.store.Time;

import com.fasterxml.jackson.core.JsonProcessingException;
import dev.coop.RunStatus;
import dev.coop.TaskOutcome;
import dev.coop.TaskState;
import dev.coop.failure.CoopValidationException;
import dev.coop.failure.Failure;
import dev.coop.failure.TaskRefusedException;
import dev.coop.inspect.TaskView;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;

/**
 * A client completes or fails an external task: one statement settles it and counts its run off at its parent (the
 * usual case: in auto-commit, one round trip, {@link #settleAlone}); a parent that this commits (a task of its last
 * step) is counted off in turn, and join memberships are settled, in one transaction, as a finishing run's transaction
 * does. A call that
 * finds the task settled already reads it, to say whether it was the same outcome (a no-op) or refuse it.
 */
public final class TaskSettlement {
    /** The actor of a completion that names none. */
    public static final String CLIENT = "coop-client";
    /** The longest actor name. */
    public static final int MAX_ACTOR_LENGTH = 200;

    private final ExternalTasks tasks;
    private final TaskReads reads;
    private final Store store;
    private final JoinBook joins;
    private final Json json;
    /** On Citus, the settlement as routed statements; null on plain PostgreSQL. */
    private final RootSettlement byRoot;

    public TaskSettlement(SchemaName schema, Time time, Json json) {
        this.tasks = new ExternalTasks(schema, time);
        this.reads = new TaskReads(schema);
        this.store = new Store(schema, time);
        this.joins = new JoinBook(store, json);
        this.json = json;
        this.byRoot = schema.citus() ? new RootSettlement(schema, time, store) : null;
    }

    private ExternalTasks.Settled settleTask(Connection c, String tokenOrKey, boolean complete, String result,
            String failure, String actor) throws SQLException {
        return byRoot != null
                ? byRoot.settle(c, tokenOrKey, complete, result, failure, actor)
                : tasks.settle(c, tokenOrKey, complete, result, failure, actor);
    }

    /** What a settlement did, and the sagas whose runs it made runnable (to wake in-process after the commit). */
    public record Result(TaskOutcome outcome, Set<String> woken) {
    }

    /** The JSON a completion stores, checked like a payload (size included) before anything is sent. */
    public String resultJson(Object result) {
        return json.writeValue("result of an external task", Objects.requireNonNull(result, "result"));
    }

    /** The failure document a failure stores. */
    public static String failureJson(String reason, String actor) {
        return new Failure(InputLimits.reason(reason), ExternalTasks.FAILED_TYPE, actor, List.of(), List.of()).toJson();
    }

    /** Settles in the caller's transaction; the caller commits. */
    public Result settle(Connection c, String tokenOrKey, boolean complete, String resultJson, String failureJson,
            String actor) throws SQLException {
        ExternalTasks.Settled settled = settleTask(c, tokenOrKey, complete, resultJson, failureJson, actor);
        if (!settled.settled()) {
            return new Result(already(c, tokenOrKey, complete, resultJson, failureJson), Set.of());
        }
        return finish(c, settled);
    }

    /**
     * What follows a settlement in its transaction, as it follows a finishing run's: a parent it committed is counted
     * off at its own parent (and so on up), and the join memberships of the task's message and of every committed
     * parent's are settled.
     */
    private Result finish(Connection c, ExternalTasks.Settled settled) throws SQLException {
        Counted parent = settled.parent();
        List<UUID> committedAbove = new ArrayList<>();
        while (parent != null && parent.status() == RunStatus.COMMITTED) {
            committedAbove.add(parent.messageId());
            parent = parent.parentId() == null
                    ? null
                    : store.countOff(c, parent, RunStatus.COMMITTED, null, null);
        }
        Set<String> woken = new java.util.HashSet<>(joins.runsFinished(c, settled.message(), committedAbove));
        if (parent != null && parent.status() == RunStatus.RUNNABLE) {
            woken.add(parent.saga());
        }
        return new Result(TaskOutcome.SETTLED, woken);
    }

    /**
     * Settles in one statement that needs nothing after it (run it in auto-commit: one round trip), or does nothing
     * and answers null when the task is not open, its parent is in its last step, or its message is a pending member
     * of a join ({@link TaskSql#ALONE}): then {@link #settle} in a transaction decides.
     */
    public Result settleAlone(Connection c, String tokenOrKey, boolean complete, String resultJson,
            String failureJson, String actor) throws SQLException {
        if (byRoot != null) { // on Citus a settlement takes several statements: in a transaction
            return null;
        }
        ExternalTasks.Settled settled = tasks.settle(c, tokenOrKey, complete, resultJson, failureJson, actor, true);
        if (!settled.settled()) {
            return null;
        }
        Counted parent = settled.parent();
        if (parent != null && parent.status() == RunStatus.COMMITTED) { // excluded by TaskSql.ALONE
            throw new IllegalStateException("a settlement alone committed parent run " + parent.id());
        }
        return new Result(TaskOutcome.SETTLED,
                parent != null && parent.status() == RunStatus.RUNNABLE ? Set.of(parent.saga()) : Set.of());
    }

    /**
     * Sends a signal to a key: completes the open task holding the key, or else keeps the signal (for
     * {@code keepMillis}) for the next step that waits for the key. Under the key's advisory lock, which a step
     * waiting for the key takes too.
     */
    public Result signal(Connection c, String key, String payloadJson, String sender, long keepMillis)
            throws SQLException {
        tasks.lockSignalKey(c, dev.coop.TaskOptions.none().key(key).key().orElseThrow()); // validated as a task key
        ExternalTasks.Settled settled = settleTask(c, key, true, payloadJson, null, sender);
        if (settled.settled()) {
            return finish(c, settled);
        }
        tasks.keepSignal(c, key, payloadJson, sender, keepMillis);
        return new Result(dev.coop.TaskOutcome.ALREADY_SETTLED, Set.of()); // kept: see CoopClient.signal
    }

    private TaskOutcome already(Connection c, String tokenOrKey, boolean complete, String resultJson,
            String failureJson) throws SQLException {
        ExternalTasks.Address address = ExternalTasks.address(tokenOrKey);
        TaskView task = reads.find(c, tokenOrKey).orElseThrow(() -> new CoopValidationException(address.token()
                ? "No external task has this token"
                : "No external task has the key '" + address.value() + "'"));
        TaskState wanted = complete ? TaskState.COMPLETED : TaskState.FAILED;
        if (task.state() == wanted && (complete
                ? sameJson(task.result().orElse(null), resultJson)
                : task.failure().orElse("").equals(Failure.fromJson(failureJson).message()))) {
            return TaskOutcome.ALREADY_SETTLED;
        }
        String first = switch (task.state()) {
            case OPEN -> "is open but cannot be settled now (its run moved on)";
            case COMPLETED -> "was already completed" + (complete ? " with another result" : "");
            case FAILED -> "was already failed" + (complete ? "" : " for another reason") + " ("
                    + task.failure().orElse("") + ")";
            case TIMED_OUT -> "timed out (" + task.failure().orElse("") + ")";
            case CANCELLED -> "was cancelled (" + task.failure().orElse("") + ")";
            case COMPENSATING -> "was completed, and is being compensated since its scope rolled back";
            case COMPENSATED -> "was completed, then compensated when its scope rolled back";
            case COMPENSATION_FAILED -> "was completed, then its scope rolled back and its compensation failed";
        };
        throw new TaskRefusedException("External task '" + task.name() + "'"
                + task.key().map(k -> " (key '" + k + "')").orElse("") + " " + first
                + task.settledAt().map(at -> " at " + at).orElse("")
                + task.settledBy().map(by -> " by " + by).orElse("") + "; this "
                + (complete ? "completion" : "failure") + " is refused", task.state());
    }

    private boolean sameJson(String a, String b) {
        if (a == null || b == null) {
            return a == b;
        }
        try {
            return json.mapper().readTree(a).equals(json.mapper().readTree(b));
        } catch (JsonProcessingException e) {
            return false;
        }
    }
}
