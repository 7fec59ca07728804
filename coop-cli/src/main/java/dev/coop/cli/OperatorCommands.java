package dev.coop.cli;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.coop.CancelResult;
import dev.coop.MessageId;
import dev.coop.PruneResult;
import java.time.Duration;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** The subcommands of {@code coop} that act: retry and mark done parked runs, cancel, roll back and prune. */
final class OperatorCommands {
    private OperatorCommands() {
    }

    @Command(name = "retry", mixinStandardHelpOptions = true, description = "Retry a parked run's step now, from"
            + " attempt 1.")
    static final class Retry extends Commands.Base {
        @Parameters(paramLabel = "<run-id>", arity = "0..1", description = "The id of the parked run (a UUID; see:"
                + " coop parked)")
        java.util.UUID run;

        @Option(names = "--saga", paramLabel = "<saga>", description = "With --parked: every parked run of this saga,"
                + " in batches of 1,000 runs (one transaction each), each hierarchy audited")
        String saga;

        @Option(names = "--parked", description = "With --saga: retry its parked runs")
        boolean parked;

        @Option(names = "--dry-run", description = "With --saga --parked: only say how many runs would be retried")
        boolean dryRun;

        @Option(names = "--reason", paramLabel = "<text>", description = "With --saga --parked: why (required;"
                + " recorded in the audit with --actor)")
        String reason;

        @Option(names = "--actor", paramLabel = "<name>", description = "Who retries (default: $USER)")
        String actor;

        @Override
        public void run() {
            if ((run == null) == (saga == null) || (saga != null) != parked) {
                throw new CliException(CoopCli.EXIT_USAGE, "Give either a parked run's id, or --saga <saga> --parked");
            }
            if (run != null) {
                Commands.resolved(cli, run, Commands.operate(() -> database().client.retryNow(run)),
                        "will retry its step now");
                return;
            }
            long count = Commands.operate(() -> database().client.countParked(saga));
            if (dryRun) {
                cli.out().println(count + " parked run" + (count == 1 ? "" : "s") + " of saga " + saga
                        + " would be retried (dry run: nothing was changed)");
                return;
            }
            if (reason == null || reason.isBlank()) {
                throw new CliException(CoopCli.EXIT_USAGE, "Say why with --reason: it is recorded in the audit ("
                        + count + " parked runs of saga " + saga + " would be retried)");
            }
            String who = actor != null ? actor : System.getProperty("user.name", "coop");
            long retried = Commands.operate(() -> database().client.retryParked(saga, who, reason));
            cli.out().println("Retried " + retried + " parked run" + (retried == 1 ? "" : "s") + " of saga " + saga
                    + " (from attempt 1); audited as " + who);
        }
    }

    @Command(name = "mark-done", mixinStandardHelpOptions = true, description = "Treat a parked run's step as done"
            + " without running it; the run goes on with its next step.")
    static final class MarkDone extends Commands.Base {
        @Parameters(paramLabel = "<run-id>", description = "The id of the parked run (a UUID; see: coop parked)")
        java.util.UUID run;

        @Override
        public void run() {
            Commands.resolved(cli, run, Commands.operate(() -> database().client.markStepDone(run)),
                    "goes on as if its step had succeeded");
        }
    }

    /**
     * A cancel or rollback names either a message or a selection of runs: with a selection, acts on it and returns
     * true; with a message, checks that a reason was given and returns false.
     */
    private static boolean actOnSelection(Commands.Base command, Selection selection, MessageId message,
            boolean cancel, String reason) {
        if (selection.given() == (message != null)) {
            throw new CliException(CoopCli.EXIT_USAGE, "Give either a message id, or a selection (--saga <saga>"
                    + " and filters)");
        }
        if (message == null) {
            selection.run(command.cli, command.database().client, cancel, reason);
            return true;
        }
        Commands.requireReason(reason);
        return false;
    }

    @Command(name = "cancel", mixinStandardHelpOptions = true, description = "Cancel everything below a message: each run gives up at its next step boundary and rolls"
            + " back, running its compensations.")
    static final class Cancel extends Commands.Base {
        @Parameters(paramLabel = "<message-id>", arity = "0..1", description = "The id of the message (a UUID); or"
                + " select runs with --saga and the filters below")
        MessageId message;

        @Option(names = "--reason", paramLabel = "<text>", description = "Why; recorded in the event log (and the"
                + " audit, for a selection)")
        String reason;

        @Mixin
        Selection selection;

        @Override
        public void run() {
            if (actOnSelection(this, selection, message, true, reason)) {
                return;
            }
            CancelResult result = Commands.operate(() -> database().client.cancel(message, reason));
            if (cli.json) {
                ObjectNode n = JsonNodeFactory.instance.objectNode();
                n.put("messageId", message.toString());
                n.put("result", result.name());
                cli.out().println(cli.jsonRenderer().write(n));
                return;
            }
            cli.out().println(switch (result) {
                case REQUESTED -> "Cancellation requested: every run below message " + message
                        + " gives up at its next step boundary and rolls back. Follow it with: coop tree " + message;
                case ALREADY_REQUESTED -> "Message " + message + " was cancelled before; nothing changed.";
                case ALREADY_FINISHED -> "Everything below message " + message + " had finished; nothing changed"
                        + " (to undo it: coop rollback " + message + " --reason ...).";
            });
        }
    }

    @Command(name = "rollback", mixinStandardHelpOptions = true, description = "Undo a finished hierarchy: every run below the message rolls back its whole history,"
            + " children first, running compensations.")
    static final class Rollback extends Commands.Base {
        @Parameters(paramLabel = "<message-id>", arity = "0..1", description = "The id of the message (a UUID); or"
                + " select committed runs with --saga and the filters below")
        MessageId message;

        @Option(names = "--reason", paramLabel = "<text>", description = "Why; recorded in the event log (and the"
                + " audit, for a selection)")
        String reason;

        @Mixin
        Selection selection;

        @Override
        public void run() {
            if (actOnSelection(this, selection, message, false, reason)) {
                return;
            }
            Commands.operate(() -> {
                database().client.rollback(message, reason);
                return null;
            });
            if (cli.json) {
                ObjectNode n = JsonNodeFactory.instance.objectNode();
                n.put("messageId", message.toString());
                n.put("result", "REQUESTED");
                cli.out().println(cli.jsonRenderer().write(n));
                return;
            }
            cli.out().println("Rollback requested: every run below message " + message
                    + " rolls back, children first. Follow it with: coop tree " + message);
        }
    }

    @Command(name = "prune", mixinStandardHelpOptions = true, description = "Delete finished hierarchies (messages, events,"
            + " runs) whose root runs all finished longer ago than --older-than; anything runnable, sleeping, waiting or"
            + " parked is kept.")
    static final class Prune extends Commands.Base {
        @Option(names = "--older-than", required = true, paramLabel = "<age>", converter = Converters.AgeConverter.class, description = "30s, 15m, 2h or 30d")
        Duration olderThan;

        @Option(names = "--dry-run", description = "Only say how many hierarchies would go, and some of their ids")
        boolean dryRun;

        @Override
        public void run() {
            PruneResult r = Commands.operate(() -> dryRun
                    ? database().client.pruneDryRun(olderThan)
                    : database().client.prune(olderThan));
            if (cli.json) {
                ObjectNode n = JsonNodeFactory.instance.objectNode();
                n.put("dryRun", r.dryRun());
                n.put("cutoff", r.cutoff().toString());
                n.put("hierarchies", r.hierarchies());
                if (!r.dryRun()) {
                    n.put("runs", r.runs());
                    n.put("events", r.events());
                    n.put("messages", r.messages());
                }
                var sample = n.putArray("sample");
                r.sample().forEach(m -> sample.add(m.toString()));
                cli.out().println(cli.jsonRenderer().write(n));
                return;
            }
            String what = r.hierarchies() + (r.hierarchies() == 1 ? " hierarchy" : " hierarchies")
                    + " finished before " + r.cutoff();
            cli.out().println(r.dryRun()
                    ? "Would delete " + what + " (dry run: nothing deleted)."
                    : "Deleted " + what + ": " + r.messages() + " messages, " + r.runs() + " runs, " + r.events()
                            + " events.");
            r.sample().forEach(m -> cli.out().println("  " + m));
            if (r.hierarchies() > r.sample().size()) {
                cli.out().println("  ... and " + (r.hierarchies() - r.sample().size()) + " more");
            }
        }
    }
}
