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
            rule("^(BEGIN|START TRANSACTION)", "BEGIN"),
            rule("^COMMIT", "COMMIT"),
            rule("^ROLLBACK", "ROLLBACK"),
            rule("^LISTEN", "LISTEN"),
            rule("^SET ", "SET"),
            rule("^SHOW ", "SHOW"));

    private static final Pattern UTILITY = Pattern.compile(
            "^(BEGIN|START|COMMIT|ROLLBACK|END|SET|SHOW|RESET|LISTEN|UNLISTEN|DISCARD|SAVEPOINT|RELEASE|DEALLOCATE)\\b",
            Pattern.CASE_INSENSITIVE);

    private StatementLabels() {
    }

    static String label(String query) {
        String s = query.replaceAll("\\s+", " ").strip();
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
