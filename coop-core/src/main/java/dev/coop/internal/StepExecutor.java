package dev.coop.internal;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.coop.CoopValidationException;
import dev.coop.EventType;
import dev.coop.RunStatus;
import dev.coop.Saga;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Executes one transaction of a claimed run: its next step, or its final COMMITTED, or its failure. Every path ends
 * with the transaction committed or rolled back; the row lock of the claim is held until then.
 */
final class StepExecutor {
    private static final Logger log = LoggerFactory.getLogger(StepExecutor.class);
    private static final long MAX_RETRY_DELAY_MILLIS = 30_000;

    private final EngineContext engine;

    StepExecutor(EngineContext engine) {
        this.engine = engine;
    }

    /** @return true when the run is runnable again at once (its step emitted nothing and more steps follow) */
    boolean execute(Connection c, ClaimedRun run) throws SQLException {
        Saga<?> saga = engine.sagas().get(run.saga());
        if (run.failedChildren() > 0) {
            failBecauseOfChildren(c, run, saga);
            return false;
        }
        if (run.stepIndex() >= saga.steps().size()) {
            commitRun(c, run, saga);
            return false;
        }
        return runStep(c, run, saga);
    }

    private <P> boolean runStep(Connection c, ClaimedRun run, Saga<P> saga) throws SQLException {
        Saga.Step<P> step = saga.steps().get(run.stepIndex());
        P payload;
        try {
            payload = engine.json().readPayload(run.payload(), saga.topic().payloadType());
        } catch (Exception e) {
            CoopValidationException unreadable = new CoopValidationException(
                    "Payload of message " + run.messageId()
                            + " on topic '" + run.topic() + "' cannot be read as "
                            + saga.topic().payloadType().getName() + ": "
                            + e.getMessage(),
                    e);
            fail(c, run, step.name(), FailureJson.of(unreadable, source(run)));
            return false;
        }
        StepContextImpl<P> context = new StepContextImpl<>(run, step.name(), payload, engine.engineId(), c,
                engine.json());
        Throwable thrown = null;
        try {
            step.body().run(context);
        } catch (Throwable t) {
            thrown = t;
        } finally {
            context.close();
        }
        if (thrown != null) {
            stepThrew(c, run, step.name(), thrown);
            return false;
        }
        return commitStep(c, run, saga, step.name(), context);
    }

    private boolean commitStep(Connection c, ClaimedRun run, Saga<?> saga, String step,
            StepContextImpl<?> context)
            throws SQLException {
        try {
            List<String> woken = new ArrayList<>();
            int children = 0;
            if (!context.scoped.isEmpty()) {
                Map<String, Integer> created = engine.store().emit(c, run.lineage(), run.id(),
                        run.stepsDone(),
                        saga.name(), engine.engineId(), step, context.scoped);
                children = created.values().stream().mapToInt(Integer::intValue).sum();
                woken.addAll(created.keySet());
            }
            if (!context.global.isEmpty()) {
                woken.addAll(engine.store().emit(c, null, null, null, saga.name(), engine.engineId(), step,
                        context.global).keySet());
            }
            boolean last = run.stepIndex() + 1 == saga.steps().size();
            List<LogEntry> entries = new ArrayList<>(2);
            entries.add(LogEntry.of(EventType.SUSPENDED, step));
            RunStatus status = children > 0
                    ? RunStatus.WAITING
                    : last ? RunStatus.COMMITTED : RunStatus.RUNNABLE;
            if (status == RunStatus.COMMITTED) {
                entries.add(LogEntry.of(EventType.COMMITTED, step));
            }
            String parentSaga = engine.store().advance(c, run, engine.engineId(), entries,
                    new Store.Advance(status, run.stepIndex() + 1, run.stepsDone() + 1, children, null));
            c.commit();
            woken.forEach(engine.dispatcher()::wake);
            if (status.isFinished()) {
                finished(run, parentSaga);
            }
            return status == RunStatus.RUNNABLE;
        } catch (SQLException | RuntimeException e) {
            stepThrew(c, run, step, e);
            return false;
        }
    }

    /** All children of the last step finished: the run commits. */
    private void commitRun(Connection c, ClaimedRun run, Saga<?> saga) throws SQLException {
        String lastStep = saga.steps().getLast().name();
        String parentSaga = engine.store().advance(c, run, engine.engineId(),
                List.of(LogEntry.of(EventType.COMMITTED, lastStep)),
                new Store.Advance(RunStatus.COMMITTED, run.stepIndex(), run.stepsDone(), 0, null));
        c.commit();
        finished(run, parentSaga);
    }

    /** Runs caused by the previous step rolled back: the run fails with their failures as causes. */
    private void failBecauseOfChildren(Connection c, ClaimedRun run, Saga<?> saga) throws SQLException {
        int seq = run.stepsDone() - 1;
        String step = saga.steps().get(run.stepIndex() - 1).name();
        List<String> childFailures = engine.store().childFailures(c, run.id(), seq);
        ObjectNode failure = FailureJson.of("dev.coop.ChildRolledBackException", childFailures.size()
                + " child run(s) of step '" + step + "' did not commit", source(run));
        for (String child : childFailures) {
            try {
                failure.withArray("causes").add(engine.json().mapper().readTree(child));
            } catch (Exception e) {
                failure.withArray("causes").add(FailureJson.of(e, source(run)));
            }
        }
        fail(c, run, step, failure);
    }

    /** The step (or writing its result) threw: its transaction is rolled back, then the failure is recorded. */
    private void stepThrew(Connection c, ClaimedRun run, String step, Throwable thrown) throws SQLException {
        Worker.rollbackQuietly(c);
        boolean interruptedByShutdown = thrown instanceof InterruptedException
                && engine.dispatcher().stopped();
        if (Failures.isInfrastructure(thrown) || interruptedByShutdown) {
            retryLater(c, run, step, thrown);
            return;
        }
        log.info("Step '{}' of run {} (saga {}) failed: {}", step, run.id(), run.saga(), thrown.toString());
        ClaimedRun again = engine.store().reclaimUnchanged(c, run, engine.engineId());
        if (again == null) {
            c.commit(); // another engine took the run meanwhile and moved on
            return;
        }
        fail(c, again, step, FailureJson.of(thrown, source(run)));
    }

    private void fail(Connection c, ClaimedRun run, String step, ObjectNode failure) throws SQLException {
        String json = engine.json().write(failure);
        String parentSaga = engine.store().advance(c, run, engine.engineId(),
                List.of(new LogEntry(EventType.ROLLING_BACK, step, json),
                        LogEntry.of(EventType.ROLLED_BACK, step)),
                new Store.Advance(RunStatus.ROLLED_BACK, run.stepIndex(), run.stepsDone(), 0, json));
        c.commit();
        finished(run, parentSaga);
    }

    /** Coop's own bookkeeping failed: nothing of the step is kept; the run is retried later with backoff. */
    private void retryLater(Connection c, ClaimedRun run, String step, Throwable cause) throws SQLException {
        long ceiling = Math.min(MAX_RETRY_DELAY_MILLIS, 100L << Math.min(run.retries(), 10));
        long delay = ceiling / 2 + ThreadLocalRandom.current().nextLong(ceiling / 2 + 1);
        log.warn("Step '{}' of run {} (saga {}) hit a database problem ({}); retrying in {} ms", step,
                run.id(),
                run.saga(), cause.toString(), delay);
        if (cause instanceof InterruptedException) {
            Thread.currentThread().interrupt();
        }
        engine.store().postpone(c, run.id(), delay);
        c.commit();
        engine.dispatcher().dueIn(delay);
    }

    private void finished(ClaimedRun run, String parentSaga) {
        engine.completions().finished(run.messageId());
        if (parentSaga != null) {
            engine.dispatcher().wake(parentSaga);
        }
    }

    private String source(ClaimedRun run) {
        return run.saga() + "[" + engine.engineId() + "]";
    }
}
