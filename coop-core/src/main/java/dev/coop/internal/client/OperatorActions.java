package dev.coop.internal.client;

import dev.coop.CancelResult;
import dev.coop.Lineage;
import dev.coop.MessageId;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.AuditEntry;
import dev.coop.inspect.ParkedRun;
import dev.coop.inspect.RunQuery;
import dev.coop.internal.operate.AuditLog;
import dev.coop.internal.operate.BulkActions;
import dev.coop.internal.operate.Operations;
import dev.coop.internal.operate.ParkedRuns;
import dev.coop.internal.operate.SelectionBatches;
import dev.coop.internal.store.InputLimits;
import java.util.List;
import java.util.Objects;
import java.util.UUID;

/**
 * What operators do to runs through a client: cancel, roll back, retry or mark done parked runs, one scope or a
 * selection at a time, and the audit entries that record it.
 */
public final class OperatorActions {
    private final ClientContext client;
    private final Operations operations;
    private final ParkedRuns parked;
    private final BulkActions bulk;
    private final SelectionBatches selections;
    private final AuditLog audit;

    public OperatorActions(ClientContext client) {
        this.client = client;
        this.operations = new Operations(client.schema(), client.time());
        this.parked = new ParkedRuns(client.schema(), client.time());
        this.bulk = new BulkActions(client.schema(), client.store().time());
        this.selections = new SelectionBatches(client.schema(), client.store().time());
        this.audit = new AuditLog(client.schema());
    }

    public CancelResult cancel(MessageId message, String reason) {
        Objects.requireNonNull(message, "message");
        return client.inTransaction("cancel message " + message,
                c -> operations.cancel(c, message, null, Arguments.reason(reason)));
    }

    public CancelResult cancel(Lineage scope, String reason) {
        Objects.requireNonNull(scope, "scope");
        return client.inTransaction("cancel scope " + scope,
                c -> operations.cancel(c, null, scope, Arguments.reason(reason)));
    }

    public void rollback(MessageId message, String reason) {
        Objects.requireNonNull(message, "message");
        client.inTransaction("roll back message " + message, c -> {
            operations.rollback(c, message, null, Arguments.reason(reason));
            return null;
        });
    }

    public void rollback(Lineage scope, String reason) {
        Objects.requireNonNull(scope, "scope");
        client.inTransaction("roll back scope " + scope, c -> {
            operations.rollback(c, null, scope, Arguments.reason(reason));
            return null;
        });
    }

    /** Cancels ({@code cancel}) or rolls back the runs of a selection, in batches; how many it acted on. */
    public long actOn(RunQuery selection, String actor, String reason, boolean cancel) {
        Objects.requireNonNull(selection, "selection");
        if (!SelectionBatches.names(selection)) {
            throw new CoopValidationException("selection must name a saga, a topic, a business key or a tag (it"
                    + " would act on every run)");
        }
        String who = Arguments.actor(actor);
        String why = Arguments.reason(reason);
        String described = SelectionBatches.describe(selection);
        String what = (cancel ? "cancel" : "roll back") + " the runs of a selection (" + described + ")";
        long acted = 0;
        UUID after = null;
        while (true) {
            UUID from = after;
            SelectionBatches.Batch batch = client.inTransaction(what, c -> cancel
                    ? selections.cancelBatch(c, selection, from, who, why, described)
                    : selections.rollbackBatch(c, selection, from, who, why, described));
            acted += batch.acted();
            if (batch.picked() < BulkActions.BATCH) {
                return acted;
            }
            after = batch.last();
        }
    }

    public List<ParkedRun> parkedRuns(int limit) {
        if (limit < 1) {
            throw new CoopValidationException("limit must be positive, was " + limit);
        }
        return client.inTransaction("list parked runs", c -> parked.list(c, limit));
    }

    public boolean retryNow(UUID runId) {
        Objects.requireNonNull(runId, "runId");
        return client.inTransaction("retry run " + runId, c -> parked.resolve(c, runId, false));
    }

    public boolean retryNow(Lineage run) {
        Objects.requireNonNull(run, "run");
        return client.inTransaction("retry run " + run, c -> resolve(c, run, false));
    }

    public boolean markStepDone(UUID runId) {
        Objects.requireNonNull(runId, "runId");
        return client.inTransaction("mark the step of run " + runId + " done",
                c -> parked.resolve(c, runId, true));
    }

    public boolean markStepDone(Lineage run) {
        Objects.requireNonNull(run, "run");
        return client.inTransaction("mark the step of run " + run + " done",
                c -> resolve(c, run, true));
    }

    public long countParked(String saga) {
        Objects.requireNonNull(saga, "saga");
        return client.inTransaction("count the parked runs of saga " + saga, c -> bulk.countParked(c, saga));
    }

    public long retryParked(String saga, String actor, String reason) {
        Objects.requireNonNull(saga, "saga");
        String who = Arguments.actor(actor);
        String why = Arguments.reason(reason);
        long parked = countParked(saga);
        long retried = 0;
        for (long batches = parked / BulkActions.BATCH + 1; batches > 0; batches--) {
            int n = client.inTransaction("retry parked runs of saga " + saga,
                    c -> bulk.retryParkedBatch(c, saga, who, why));
            retried += n;
            if (n < BulkActions.BATCH) {
                break;
            }
        }
        return retried;
    }

    public AuditEntry recordAudit(MessageId message, Lineage scope, String action, String actor, String reason,
            String outcome) {
        Objects.requireNonNull(message, "message");
        String what = Arguments.auditText("action", action, 100);
        String who = Arguments.actor(actor);
        String why = Arguments.reason(reason);
        String result = outcome == null ? "" : outcome.substring(0, Math.min(outcome.length(), 2_000));
        return client.inTransaction("record an audit entry", c -> audit.record(c, message, scope, what, who, why,
                InputLimits.loneSurrogateAt(result) >= 0 ? "?" : result.replace('\0', ' ')));
    }

    public List<AuditEntry> audit(MessageId message) {
        Objects.requireNonNull(message, "message");
        return client.inTransaction("read the audit of message " + message, c -> audit.list(c, message, 1_000));
    }

    /** Resolves the parked run of a lineage, refused when the lineage names no run. */
    private boolean resolve(java.sql.Connection c, Lineage run, boolean skip) throws java.sql.SQLException {
        operations.requireRun(c, run);
        return parked.resolve(c, run.last(), skip);
    }
}
