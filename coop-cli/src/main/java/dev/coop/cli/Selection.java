package dev.coop.cli;

import dev.coop.CoopClient;
import dev.coop.RunStatus;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.RunQuery;
import java.time.OffsetDateTime;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;
import picocli.CommandLine.Option;

/**
 * The filters of {@code coop cancel} and {@code coop rollback} when they act on many runs at once: the runs a
 * {@link RunQuery} selects, acted on in batches of 1,000 runs ({@link CoopClient#cancel(RunQuery, String, String)},
 * {@link CoopClient#rollback(RunQuery, String, String)}), or only counted with {@code --dry-run}.
 */
final class Selection {
    @Option(names = "--saga", paramLabel = "<saga>", description = "Every selected run of this saga (instead of a"
            + " message id)")
    String saga;

    @Option(names = "--topic", paramLabel = "<topic>", description = "Only runs handling messages of this topic")
    String topic;

    @Option(names = "--status", paramLabel = "<status>", converter = Converters.StatusConverter.class, description = "Only runs in this status (e.g. PARKED)")
    RunStatus status;

    @Option(names = "--since", paramLabel = "<time>", converter = Converters.TimeConverter.class, description = "Only runs created since then: an age (2h), a date or an ISO-8601 time")
    OffsetDateTime since;

    @Option(names = "--before", paramLabel = "<time>", converter = Converters.TimeConverter.class, description = "Only runs created before then")
    OffsetDateTime before;

    @Option(names = "--failure-type", paramLabel = "<class>", description = "Only runs whose failure is of this type"
            + " (java.io.IOException or IOException)")
    String failureType;

    @Option(names = "--key", paramLabel = "<business-key>", description = "Only runs of messages launched with this"
            + " business key")
    String businessKey;

    @Option(names = "--dry-run", description = "With a selection: only say how many runs it holds, by status")
    boolean dryRun;

    @Option(names = "--actor", paramLabel = "<name>", description = "With a selection: who acts, for the audit"
            + " (default: $USER)")
    String actor;

    /** Whether any selection option was given (the command then acts on a selection, not on a message). */
    boolean given() {
        return saga != null || topic != null || status != null || since != null || before != null
                || failureType != null || businessKey != null || dryRun || actor != null;
    }

    RunQuery query() {
        try {
            RunQuery q = RunQuery.newest();
            q = saga == null ? q : q.saga(saga);
            q = topic == null ? q : q.topic(topic);
            q = status == null ? q : q.status(status);
            q = since == null ? q : q.since(since);
            q = before == null ? q : q.before(before);
            q = failureType == null ? q : q.failureType(failureType);
            return businessKey == null ? q : q.businessKey(businessKey);
        } catch (CoopValidationException e) {
            throw new CliException(CoopCli.EXIT_USAGE, e.getMessage(), e);
        }
    }

    /**
     * Counts ({@code --dry-run}) or acts on the selection; {@code cancel} or roll back. Prints what it did, or would
     * do: how many runs, by status.
     */
    void run(CoopCli cli, CoopClient client, boolean cancel, String reason) {
        RunQuery q = query();
        if (saga == null && topic == null && businessKey == null) {
            throw new CliException(CoopCli.EXIT_USAGE, "A selection names a --saga, a --topic or a --key");
        }
        Map<RunStatus, Long> counts = client.countRuns(q);
        long eligible = cancel
                ? counts.entrySet().stream().filter(e -> !finished(e.getKey())).mapToLong(Map.Entry::getValue).sum()
                : counts.getOrDefault(RunStatus.COMMITTED, 0L);
        String verb = cancel ? "cancelled" : "rolled back";
        if (dryRun) {
            cli.out().println("At most " + eligible + " run" + (eligible == 1 ? "" : "s") + " would be " + verb
                    + (cancel ? " (the unfinished ones" : " (the committed ones") + " of " + describe(counts)
                    + "; dry run: nothing was changed)");
            return;
        }
        if (reason == null || reason.isBlank()) {
            throw new CliException(CoopCli.EXIT_USAGE, "Say why with --reason: it is recorded in the audit (at most "
                    + eligible + " runs would be " + verb + ")");
        }
        String who = actor != null ? actor : System.getProperty("user.name", "coop");
        long acted;
        try {
            acted = cancel ? client.cancel(q, who, reason) : client.rollback(q, who, reason);
        } catch (CoopValidationException e) {
            throw new CliException(CoopCli.EXIT_FAILURE, e.getMessage(), e);
        }
        cli.out().println((cancel ? "Cancellation requested for " : "Rollback requested for ") + acted + " run"
                + (acted == 1 ? "" : "s") + " (in batches of 1,000); each hierarchy audited as " + who);
    }

    private static boolean finished(RunStatus s) {
        return s == RunStatus.COMMITTED || s == RunStatus.ROLLED_BACK || s == RunStatus.ROLLBACK_FAILED;
    }

    private static String describe(Map<RunStatus, Long> counts) {
        long total = counts.values().stream().mapToLong(Long::longValue).sum();
        return total + " selected" + (counts.isEmpty()
                ? ""
                : ": " + counts.entrySet().stream()
                        .map(e -> e.getValue() + " " + e.getKey().name().toLowerCase(Locale.ROOT).replace('_', ' '))
                        .collect(Collectors.joining(", ")));
    }
}
