package dev.coop.cli;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.coop.failure.CoopValidationException;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.UUID;
import picocli.CommandLine.ParentCommand;

/**
 * What the subcommands of {@code coop} share: their base class and helpers. The subcommands are in
 * {@link ReadCommands}, {@link OperatorCommands} and {@link ToolCommands} (and {@link Sagas}, {@link Tasks},
 * {@link Counts}), the option converters in {@link Converters}.
 */
final class Commands {
    private Commands() {
    }

    /** What every subcommand shares: the global options of its parent. */
    abstract static class Base implements Runnable {
        @ParentCommand
        CoopCli cli;

        /** The database, checked to hold the Coop schema. */
        Database database() {
            Database db = cli.database();
            db.requireSchema();
            return db;
        }
    }

    interface Operation<T> {
        T run();
    }

    /** A single cancel or rollback needs a reason (picocli's own words, as when the option was required). */
    static void requireReason(String reason) {
        if (reason == null) {
            throw new CliException(CoopCli.EXIT_USAGE, "Missing required option: '--reason=<text>'");
        }
    }

    /** An operator's request; refusals (unknown id, still running, ...) are failures, not usage errors. */
    static <T> T operate(Operation<T> operation) {
        try {
            return operation.run();
        } catch (CoopValidationException e) {
            throw new CliException(CoopCli.EXIT_FAILURE, e.getMessage(), e);
        }
    }

    /** A time as the commands print it: in UTC. */
    static String time(OffsetDateTime t) {
        return t == null ? null : t.withOffsetSameInstant(ZoneOffset.UTC).toString();
    }

    /** Prints what came of retrying or marking done a parked run; refused when it was not parked. */
    static void resolved(CoopCli cli, UUID run, boolean done, String what) {
        if (!done) {
            throw new CliException(CoopCli.EXIT_FAILURE, "Run " + run + " is not parked; nothing changed");
        }
        if (cli.json) {
            ObjectNode n = JsonNodeFactory.instance.objectNode();
            n.put("runId", run.toString());
            n.put("result", "RESOLVED");
            cli.out().println(cli.jsonRenderer().write(n));
        } else {
            cli.out().println("Run " + run + " " + what + ".");
        }
    }
}
