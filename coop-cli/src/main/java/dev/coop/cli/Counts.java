package dev.coop.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.RunCount;
import dev.coop.render.TerminalText;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code coop counts}: launched, committed, rolled back and parked runs per saga, over the last minutes or hours. */
@Command(name = "counts", mixinStandardHelpOptions = true, description = "Count the runs launched, committed, rolled"
        + " back and parked per saga over the last minutes or hours (from the rollup the database keeps, per minute"
        + " of its clock).")
final class Counts extends Commands.Base {
    private static final String FORMAT = "%-32s %9s %9s %11s %15s %7s%n";

    @Option(names = "--last", paramLabel = "<age>", defaultValue = "1h", converter = Converters.AgeConverter.class, description = "How far back: 15m, 2h, 7d (default: ${DEFAULT-VALUE}; at most 7d)")
    Duration last;

    @Option(names = "--saga", paramLabel = "<saga>", description = "Only this saga")
    String saga;

    @Option(names = "--per-minute", description = "One line per saga and minute instead of the totals")
    boolean perMinute;

    @Override
    public void run() {
        List<RunCount> counts;
        try {
            counts = database().client.counts(last);
        } catch (CoopValidationException e) {
            throw new CliException(CoopCli.EXIT_USAGE, "--last: " + e.getMessage(), e);
        }
        if (saga != null) {
            counts = counts.stream().filter(n -> n.saga().equals(saga)).toList();
        }
        if (cli.json) {
            ArrayNode array = JsonNodeFactory.instance.arrayNode();
            counts.forEach(n -> json(array.addObject(), n));
            cli.out().println(cli.jsonRenderer().write(array));
            return;
        }
        if (counts.isEmpty()) {
            cli.out().println("No runs launched or finished in the last " + age(last) + ".");
            return;
        }
        PrintWriter out = cli.out();
        out.printf(perMinute ? "%-18s " + FORMAT : FORMAT, perMinute
                ? new Object[]{"MINUTE (UTC)", "SAGA", "LAUNCHED", "COMMITTED", "ROLLED BACK", "ROLLBACK FAILED",
                        "PARKED"}
                : new Object[]{"SAGA", "LAUNCHED", "COMMITTED", "ROLLED BACK", "ROLLBACK FAILED", "PARKED"});
        if (perMinute) {
            for (RunCount n : counts) {
                Object[] row = row(n);
                Object[] line = new Object[row.length + 1];
                line[0] = n.minute().toString().substring(0, 16) + "Z";
                System.arraycopy(row, 0, line, 1, row.length);
                out.printf("%-18s " + FORMAT, line);
            }
        } else {
            totals(counts).values().forEach(n -> out.printf(FORMAT, row(n)));
            out.println("(last " + age(last) + ", by the database's clock; --per-minute for each minute)");
        }
    }

    private static Object[] row(RunCount n) {
        return new Object[]{TerminalText.escape(n.saga()), n.launched(), n.committed(), n.rolledBack(),
                n.rollbackFailed(), n.parked()};
    }

    /** Per saga, in the order the sagas first appear. */
    static Map<String, RunCount> totals(List<RunCount> counts) {
        Map<String, RunCount> totals = new LinkedHashMap<>();
        for (RunCount n : counts) {
            totals.merge(n.saga(), n, (a, b) -> new RunCount(a.saga(), a.minute(), a.launched() + b.launched(),
                    a.committed() + b.committed(), a.rolledBack() + b.rolledBack(),
                    a.rollbackFailed() + b.rollbackFailed(), a.parked() + b.parked()));
        }
        return totals;
    }

    private static void json(ObjectNode o, RunCount n) {
        o.put("saga", n.saga());
        o.put("minute", n.minute().toString());
        o.put("launched", n.launched());
        o.put("committed", n.committed());
        o.put("rolledBack", n.rolledBack());
        o.put("rollbackFailed", n.rollbackFailed());
        o.put("parked", n.parked());
    }

    private static String age(Duration d) {
        return d.toDays() > 0 && d.toHours() % 24 == 0
                ? d.toDays() + "d"
                : d.toHours() > 0 && d.toMinutes() % 60 == 0
                        ? d.toHours() + "h"
                        : d.toMinutes() + "m";
    }
}
