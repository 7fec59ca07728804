package dev.coop.internal.step;

import dev.coop.internal.store.ClaimedRun;
import dev.coop.internal.guard.GuardedConnection;
import dev.coop.internal.store.ChildRun;
import dev.coop.internal.store.Uuids;
import dev.coop.internal.task.ExternalTasks;
import dev.coop.internal.task.TaskRequest;

import dev.coop.MessageId;
import dev.coop.RunResult;
import dev.coop.Topic;
import dev.coop.failure.CoopStoreException;
import dev.coop.failure.CoopValidationException;
import dev.coop.failure.Failure;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/**
 * A step's children as its context sees them: the results of the runs its previous step caused (read once, when first
 * asked), the external tasks it opens (held until its body returned), and the results of the previous step's tasks.
 */
final class StepChildren {
    final List<TaskRequest> tasks = new ArrayList<>();
    private final ClaimedRun run;
    private final EngineContext engine;
    private final GuardedConnection.Guard guard;
    /** The step instances whose children {@link #results()} reads. */
    private final int[] childSeqs;
    private List<RunResult> childResults;

    StepChildren(ClaimedRun run, EngineContext engine, GuardedConnection.Guard guard, int[] childSeqs) {
        this.run = run;
        this.engine = engine;
        this.guard = guard;
        this.childSeqs = childSeqs;
    }

    /** The results of the runs the previous step caused, read when first asked. */
    List<RunResult> results() {
        if (childResults == null) {
            if (childSeqs.length == 0) {
                childResults = List.of();
            } else {
                try {
                    List<RunResult> results = new ArrayList<>();
                    for (ChildRun r : engine.store().childRuns(guard.connection(), run.id(), childSeqs)) {
                        results.add(new RunResult(new MessageId(r.messageId()), r.saga(), r.runId(), r.status(),
                                r.result(), r.failure() == null ? null : Failure.fromJson(r.failure()),
                                engine.json().mapper()));
                    }
                    childResults = List.copyOf(results);
                } catch (SQLException e) {
                    throw new CoopStoreException("Could not read the child results of run " + run.id(), e);
                }
            }
        }
        return childResults;
    }

    /** Opens an external task of the step (held until its body returned). */
    dev.coop.ExternalTask open(String name, Object payload, dev.coop.TaskOptions options, boolean signal) {
        Topic<Object> topic = Topic.of(name, Object.class); // the name's rules are a topic's
        String key = options.key().orElse(null);
        if (key != null && tasks.stream().anyMatch(t -> key.equals(t.key()))) {
            throw new CoopValidationException("External task key '" + key + "' was already used by this step");
        }
        String compensationTopic = options.compensationTopic().map(Topic::name).orElse(null);
        String compensation = compensationTopic == null
                ? null
                : engine.json().writePayload(options.compensationTopic().get(),
                        options.compensationPayload().orElseThrow());
        TaskRequest task = new TaskRequest(Uuids.v7(), Uuids.v7(), name, engine.json().writePayload(topic, payload),
                ExternalTasks.newToken(), key, compensationTopic, compensation, signal,
                options.timeout().map(t -> run.claimedAt().plus(t)).orElse(null));
        tasks.add(task);
        return new dev.coop.ExternalTask(name, new MessageId(task.messageId()), task.token(), options.key());
    }

    /** The result of the previous step's one external task named {@code name}. */
    <T> T taskResult(String name, Class<T> type) {
        List<ChildRun> runs;
        try {
            runs = childSeqs.length == 0
                    ? List.of()
                    : new ExternalTasks(engine.store().schema(), engine.store().time())
                            .taskRuns(guard.connection(), run.id(), childSeqs, name);
        } catch (SQLException e) {
            throw new CoopStoreException("Could not read the external tasks of run " + run.id(), e);
        }
        if (runs.size() != 1) {
            throw new CoopValidationException("The previous step of saga " + run.saga() + " opened " + runs.size()
                    + " external tasks named '" + name + "'" + (runs.isEmpty()
                            ? ""
                            : "; read them by message with"
                                    + " childResult(task.message(), type)"));
        }
        ChildRun r = runs.getFirst();
        return new RunResult(new MessageId(r.messageId()), r.saga(), r.runId(), r.status(), r.result(),
                r.failure() == null ? null : Failure.fromJson(r.failure()), engine.json().mapper()).get(type);
    }
}
