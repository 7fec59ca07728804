package dev.coop.bench;

import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * Short names for the statements pg_stat_statements records (its normalised text, {@code $n} for values) in the
 * side-by-side runs: Coop's launch, claims, advances; DBOS's and db-scheduler's statements on their tables. A text no
 * rule names is shortened to its first words, so that a statement whose text changed still shows.
 */
final class StatementLabels {
    private record Rule(Pattern pattern, String label) {
    }

    private static Rule rule(String regex, String label) {
        return new Rule(Pattern.compile(regex, Pattern.CASE_INSENSITIVE | Pattern.DOTALL), label);
    }

    /** First match wins; the patterns are read against the text with whitespace collapsed. */
    private static final List<Rule> RULES = List.of(
            // Coop (coop-core's store): the hot path
            rule("^WITH msg AS \\( INSERT INTO \\S*message\\b", "launch"),
            rule("^WITH events AS \\(.* UPDATE \\S*run SET status =", "finishing advance (sets status)"),
            rule("^WITH events AS \\(", "continuing advance"),
            rule("^WITH claimed AS \\(.* WHERE r\\.saga = \\$", "claim (by saga)"),
            rule("^WITH claimed AS \\(.* WHERE (r\\.root_id = \\$\\d+ AND )?r\\.id = \\$", "reclaim (by id)"),
            rule("^WITH claimed AS \\(", "claim"),
            rule("^SELECT r\\.id, r\\.root_id, .* FROM \\S*run r WHERE r\\.saga = \\$", "claim (by saga): lock"),
            rule("^WITH seen AS \\( INSERT INTO \\S*event", "claim: SEEN and message"),
            rule("^SELECT m\\.topic, .* FROM \\S*message m, \\(SELECT array_agg", "claim: message and step log"),
            rule("^SELECT m\\.topic, .* FROM \\S*message m LEFT JOIN", "claim: message and rolled back instance"),
            rule("^WITH c AS \\( SELECT \\* FROM unnest", "claim of a round: SEEN, messages, step log"),
            rule("^SELECT r\\.step_index, .* FROM \\S*run r WHERE (r\\.root_id = \\$\\d+ AND )?r\\.id = \\$\\d+ AND r\\.version",
                    "reclaim of a continuation"),
            rule("assert_no_pending_members\\(", "join check"),
            rule("^SELECT CASE WHEN status = \\$\\d+ AND pending_children", "client's await (run status)"),
            rule("^WITH clock AS MATERIALIZED \\(.* input AS", "emit"),
            rule("^WITH input AS", "emit"),
            rule("^WITH RECURSIVE levels", "probe (due runs by priority)"),
            rule("saga_registration WHERE saga = ANY", "probe (saga limits)"),
            rule("min\\(next_at\\)", "probe (schedules)"),
            rule("min\\(timeout_at\\)", "probe (join timeouts)"),
            rule("^UPDATE \\S*run SET reserved_until", "reservation update"),
            // DBOS Transact (schema dbos)
            rule("^INSERT INTO \"?dbos\"?\\.workflow_status\\b", "workflow_status insert"),
            rule("^INSERT INTO \"?dbos\"?\\.operation_outputs\\b", "operation_outputs insert"),
            rule("^UPDATE \"?dbos\"?\\.workflow_status SET status = \\$\\d+, output", "final status update"),
            rule("^UPDATE \"?dbos\"?\\.workflow_status SET executor_id", "executor update"),
            rule("^SELECT status FROM \"?dbos\"?\\.workflow_status WHERE workflow_uuid", "status select"),
            rule("^SELECT output, error, function_name", "operation_outputs select"),
            // db-scheduler (table scheduled_tasks)
            rule("^WITH locked_executions", "lock-and-fetch"),
            rule("^update scheduled_tasks set picked = \\$\\d+, picked_by", "reschedule (update)"),
            rule("^insert into scheduled_tasks", "schedule (insert)"),
            rule("^delete from scheduled_tasks", "remove (delete)"),
            rule("^select \\* from scheduled_tasks where task_name", "instance select"),
            // transaction control and session commands
            rule("^(BEGIN|START TRANSACTION)", "BEGIN"),
            rule("^COMMIT", "COMMIT"),
            rule("^ROLLBACK", "ROLLBACK"),
            rule("^LISTEN", "LISTEN"),
            rule("^SET ", "SET"),
            rule("^SHOW ", "SHOW"),
            rule("^SAVEPOINT", "SAVEPOINT"),
            rule("^RELEASE", "RELEASE"));

    private static final Pattern UTILITY = Pattern.compile(
            "^(BEGIN|START|COMMIT|ROLLBACK|END|SET|SHOW|RESET|LISTEN|UNLISTEN|DISCARD|SAVEPOINT|RELEASE|DEALLOCATE)\\b",
            Pattern.CASE_INSENSITIVE);

    private StatementLabels() {
    }

    static String label(String query) {
        String s = query.replaceAll("--[^\\n]*", " ").replaceAll("\\s+", " ").strip();
        for (Rule r : RULES) {
            if (r.pattern.matcher(s).find()) {
                return r.label;
            }
        }
        return s.length() > 50 ? s.substring(0, 50) + "..." : s;
    }

    /** Transaction control and session commands: not statements of the workload, and COMMIT waits on the WAL flush. */
    static boolean utility(String query) {
        return UTILITY.matcher(query.strip().toUpperCase(Locale.ROOT)).find();
    }
}
