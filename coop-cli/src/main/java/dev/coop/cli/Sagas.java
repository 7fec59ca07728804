package dev.coop.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.SagaVersionSummary;
import dev.coop.render.TerminalText;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

/** {@code coop saga}: the registered saga versions, and retiring a version once its runs finished. */
@Command(name = "saga", mixinStandardHelpOptions = true, description = "Saga versions (rolling deploys): list them,"
        + " or retire one.", subcommands = {Sagas.ListVersions.class, Sagas.Retire.class})
final class Sagas implements Runnable {
    @ParentCommand
    CoopCli cli;

    @Override
    public void run() {
        throw new CliException(CoopCli.EXIT_USAGE, "Say what to do: coop saga list, or coop saga retire <saga>"
                + " --version <n>");
    }

    /** The database, checked to hold the Coop schema. */
    Database database() {
        Database db = cli.database();
        db.requireSchema();
        return db;
    }

    @Command(name = "list", mixinStandardHelpOptions = true, description = "List the saga versions: which one new"
            + " runs get, how many runs of each are unfinished, and which running engines have it.")
    static final class ListVersions implements Runnable {
        @ParentCommand
        Sagas sagas;

        @Override
        public void run() {
            CoopCli cli = sagas.cli;
            List<SagaVersionSummary> all = sagas.database().client.sagaVersions();
            if (cli.json) {
                ArrayNode array = JsonNodeFactory.instance.arrayNode();
                for (SagaVersionSummary v : all) {
                    ObjectNode n = array.addObject();
                    n.put("saga", v.saga());
                    n.put("version", v.version());
                    n.put("topic", v.topic());
                    n.put("registered", v.registered());
                    n.put("current", v.current());
                    n.put("unfinishedRuns", v.unfinishedRuns());
                    ArrayNode engines = n.putArray("runningEngines");
                    v.runningEngines().forEach(engines::add);
                    n.put("stranded", v.stranded());
                }
                cli.out().println(cli.jsonRenderer().write(array));
            } else if (all.isEmpty()) {
                cli.out().println("No sagas registered.");
            } else {
                cli.out().printf("%-24s %-8s %-24s %-9s %-11s %s%n", "SAGA", "VERSION", "TOPIC", "NEW RUNS",
                        "UNFINISHED", "RUNNING ENGINES");
                for (SagaVersionSummary v : all) {
                    cli.out().printf("%-24s %-8s %-24s %-9s %-11s %s%n", TerminalText.escape(v.saga()), v.version(),
                            v.topic() == null ? "-" : TerminalText.escape(v.topic()),
                            v.current() ? "yes" : v.registered() ? "" : "retired", v.unfinishedRuns(),
                            engines(v));
                }
            }
        }

        private static String engines(SagaVersionSummary v) {
            if (v.stranded()) {
                return "none: its runs wait for an engine with version " + v.version();
            }
            return v.runningEngines().isEmpty()
                    ? "none"
                    : TerminalText.escape(String.join(", ", v.runningEngines()));
        }
    }

    /** Without the standard options: {@code --version} is the saga version here. */
    @Command(name = "retire", description = "Remove a saga version from the registry; refused while runs of that"
            + " version are unfinished (the error says how many).")
    static final class Retire implements Runnable {
        @ParentCommand
        Sagas sagas;

        @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help message and exit.")
        boolean help;

        @Parameters(paramLabel = "<saga>", description = "The saga's name")
        String saga;

        @Option(names = "--version", required = true, paramLabel = "<n>", description = "The version to retire")
        int version;

        @Override
        public void run() {
            CoopCli cli = sagas.cli;
            boolean retired;
            try {
                retired = sagas.database().client.retireSagaVersion(saga, version);
            } catch (CoopValidationException e) {
                throw new CliException(CoopCli.EXIT_FAILURE, e.getMessage(), e);
            }
            if (!retired) {
                throw new CliException(CoopCli.EXIT_FAILURE, "Version " + version + " of saga '" + saga
                        + "' is not registered; nothing changed (see: coop saga list)");
            }
            if (cli.json) {
                ObjectNode n = JsonNodeFactory.instance.objectNode();
                n.put("saga", saga);
                n.put("version", version);
                n.put("result", "RETIRED");
                cli.out().println(cli.jsonRenderer().write(n));
            } else {
                cli.out().println("Retired version " + version + " of saga '" + TerminalText.escape(saga) + "'.");
            }
        }
    }
}
