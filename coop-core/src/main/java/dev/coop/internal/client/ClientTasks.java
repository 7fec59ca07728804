package dev.coop.internal.client;

import dev.coop.SignalOutcome;
import dev.coop.TaskOutcome;
import dev.coop.failure.CoopStoreException;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.OpenTaskCount;
import dev.coop.inspect.TaskView;
import dev.coop.internal.store.InputLimits;
import dev.coop.internal.store.Tx;
import dev.coop.internal.task.TaskReads;
import dev.coop.internal.task.TaskSettlement;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.Callable;

/** A client's side of external tasks and signals: settling tasks, sending signals, reading open tasks. */
public final class ClientTasks {
    private final ClientContext client;
    private final TaskSettlement tasks;
    private final TaskReads reads;

    public ClientTasks(ClientContext client) {
        this.client = client;
        this.tasks = new TaskSettlement(client.schema(), client.time(), client.json());
        this.reads = new TaskReads(client.schema());
    }

    public TaskOutcome complete(String tokenOrKey, Object result, String actor) {
        String json = tasks.resultJson(result);
        String who = Arguments.auditText("actor", actor, TaskSettlement.MAX_ACTOR_LENGTH);
        return settleTask("complete external task", c -> tasks.settleAlone(c, tokenOrKey, true, json, null, who),
                c -> tasks.settle(c, tokenOrKey, true, json, null, who));
    }

    public TaskOutcome complete(Connection connection, String tokenOrKey, Object result) {
        Objects.requireNonNull(connection, "connection");
        String json = tasks.resultJson(result);
        return inCallers("complete external task",
                () -> tasks.settle(connection, tokenOrKey, true, json, null, TaskSettlement.CLIENT));
    }

    public TaskOutcome fail(String tokenOrKey, String reason, String actor) {
        String who = Arguments.auditText("actor", actor, TaskSettlement.MAX_ACTOR_LENGTH);
        String failure = TaskSettlement.failureJson(reason, who);
        return settleTask("fail external task", c -> tasks.settleAlone(c, tokenOrKey, false, null, failure, who),
                c -> tasks.settle(c, tokenOrKey, false, null, failure, who));
    }

    public TaskOutcome fail(Connection connection, String tokenOrKey, String reason) {
        Objects.requireNonNull(connection, "connection");
        String failure = TaskSettlement.failureJson(reason, TaskSettlement.CLIENT);
        return inCallers("fail external task",
                () -> tasks.settle(connection, tokenOrKey, false, null, failure, TaskSettlement.CLIENT));
    }

    public Optional<TaskView> externalTask(String tokenOrKey) {
        return client.inTransaction("read external task", c -> reads.find(c, tokenOrKey));
    }

    public List<TaskView> openTasks(String name, int limit) {
        if (limit < 1 || limit > 10_000) {
            throw new CoopValidationException("limit must be between 1 and 10000, was " + limit);
        }
        return client.inTransaction("list open external tasks", c -> reads.openTasks(c, name, limit));
    }

    public List<OpenTaskCount> openTaskCounts() {
        return client.inTransaction("count open external tasks", c -> reads.countOpen(c));
    }

    public SignalOutcome signal(String key, Object payload, Duration keepFor) {
        long keep = InputLimits.delay("keepFor", Objects.requireNonNull(keepFor, "keepFor")).toMillis();
        if (keep < 1) {
            throw new CoopValidationException("keepFor must be at least 1 ms, was " + keepFor);
        }
        String json = tasks.resultJson(payload);
        TaskSettlement.Result result = client.inTransaction("send a signal",
                c -> tasks.signal(c, key, json, TaskSettlement.CLIENT, keep));
        result.woken().forEach(saga -> client.localWake().accept(saga, 1));
        return result.outcome() == TaskOutcome.SETTLED ? SignalOutcome.DELIVERED : SignalOutcome.KEPT;
    }

    /**
     * One statement in auto-commit (one round trip) when it settles the task alone; else (a task of its parent's last
     * step, or one settled already) the settlement in a transaction.
     */
    private TaskOutcome settleTask(String what, Tx.Work<TaskSettlement.Result> alone,
            Tx.Work<TaskSettlement.Result> work) {
        TaskSettlement.Result result = Tx.oneStatement(client.dataSource(), what, alone);
        if (result == null) {
            result = client.inTransaction(what, work);
        }
        result.woken().forEach(saga -> client.localWake().accept(saga, 1));
        return result.outcome();
    }

    private static TaskOutcome inCallers(String what, Callable<TaskSettlement.Result> work) {
        try {
            return work.call().outcome();
        } catch (SQLException e) {
            throw new CoopStoreException("Could not " + what + ": " + e.getMessage(), e);
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
