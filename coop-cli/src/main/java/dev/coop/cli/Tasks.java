package dev.coop.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.coop.TaskOutcome;
import dev.coop.failure.CoopValidationException;
import dev.coop.failure.TaskRefusedException;
import dev.coop.inspect.TaskView;
import dev.coop.render.TerminalText;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.function.Supplier;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code coop tasks}, {@code coop complete}, {@code coop fail}: external tasks, for operators. */
final class Tasks {
    private Tasks() {
    }

    /** Who settles a task from the command line: {@code cli:<user>} unless {@code --actor} says otherwise. */
    static String defaultActor() {
        return "cli:" + System.getProperty("user.name", "unknown");
    }

    @Command(name = "tasks", mixinStandardHelpOptions = true, description = "List open external tasks, oldest first"
            + " (name, key, age, deadline, token), or show one by its token or key.")
    static final class ListTasks extends Commands.Base {
        @Parameters(arity = "0..1", paramLabel = "<token-or-key>", description = "Show this task (any state)")
        String tokenOrKey;

        @Option(names = "--name", paramLabel = "<name>", description = "Only open tasks of this name")
        String name;

        @Option(names = "--limit", paramLabel = "<n>", defaultValue = "100", description = "At most this many tasks"
                + " (default: ${DEFAULT-VALUE})")
        int limit;

        @Override
        public void run() {
            List<TaskView> tasks = tokenOrKey != null
                    ? Tasks.operate(() -> database().client.externalTask(tokenOrKey)).stream().toList()
                    : Tasks.operate(() -> database().client.openTasks(name, limit));
            if (tokenOrKey != null && tasks.isEmpty()) {
                throw new CliException(CoopCli.EXIT_FAILURE, "No external task has this token or key");
            }
            if (cli.json) {
                ArrayNode array = JsonNodeFactory.instance.arrayNode();
                tasks.forEach(t -> json(array.addObject(), t));
                cli.out().println(cli.jsonRenderer().write(array));
            } else if (tasks.isEmpty()) {
                cli.out().println("No open external tasks.");
            } else {
                cli.out().printf("%-20s %-24s %-10s %-9s %-24s %-36s %s%n", "NAME", "KEY", "STATE", "AGE",
                        "DEADLINE", "PARENT RUN", "TOKEN");
                Instant now = Instant.now();
                for (TaskView t : tasks) {
                    cli.out().printf("%-20s %-24s %-10s %-9s %-24s %-36s %s%n", TerminalText.escape(t.name()),
                            TerminalText.escape(t.key().orElse("-")), t.state(), age(t.createdAt(), now),
                            t.deadline().map(Instant::toString).orElse("-"), t.parentRunId(), t.token());
                }
            }
        }
    }

    @Command(name = "complete", mixinStandardHelpOptions = true, description = "Complete an external task with a"
            + " result (JSON); its parent run goes on. Completing it again with the same result changes nothing.")
    static final class Complete extends Commands.Base {
        @Parameters(paramLabel = "<token-or-key>", description = "The task's token (ct_...) or correlation key")
        String tokenOrKey;

        @Option(names = "--result", required = true, paramLabel = "<json>", description = "The result, as JSON"
                + " (a quoted string is a JSON string: '\"approved\"')")
        String result;

        @Option(names = "--actor", paramLabel = "<name>", description = "Who completes it (default: cli:<user>)")
        String actor;

        @Override
        public void run() {
            JsonNode value;
            try {
                value = new ObjectMapper().readTree(result);
            } catch (JsonProcessingException e) {
                throw new CliException(CoopCli.EXIT_USAGE, "--result is not JSON: " + e.getOriginalMessage());
            }
            String who = actor == null ? defaultActor() : actor;
            TaskOutcome outcome = Tasks.operate(() -> database().client.complete(tokenOrKey, value, who));
            report(cli, tokenOrKey, outcome, "completed");
        }
    }

    @Command(name = "fail", mixinStandardHelpOptions = true, description = "Fail an external task: a child failure"
            + " of the step that opened it (its handler may recover; otherwise the run rolls back).")
    static final class Fail extends Commands.Base {
        @Parameters(paramLabel = "<token-or-key>", description = "The task's token (ct_...) or correlation key")
        String tokenOrKey;

        @Option(names = "--reason", required = true, paramLabel = "<text>", description = "Why; the failure's message")
        String reason;

        @Option(names = "--actor", paramLabel = "<name>", description = "Who fails it (default: cli:<user>)")
        String actor;

        @Override
        public void run() {
            String who = actor == null ? defaultActor() : actor;
            TaskOutcome outcome = Tasks.operate(() -> database().client.fail(tokenOrKey, reason, who));
            report(cli, tokenOrKey, outcome, "failed");
        }
    }

    private static void report(CoopCli cli, String tokenOrKey, TaskOutcome outcome, String what) {
        if (cli.json) {
            ObjectNode n = JsonNodeFactory.instance.objectNode();
            n.put("task", tokenOrKey);
            n.put("result", outcome.name());
            cli.out().println(cli.jsonRenderer().write(n));
        } else if (outcome == TaskOutcome.SETTLED) {
            cli.out().println("External task " + TerminalText.escape(tokenOrKey) + " " + what
                    + "; its parent run goes on when it waits for nothing else.");
        } else {
            cli.out().println("External task " + TerminalText.escape(tokenOrKey) + " was already " + what
                    + " so; nothing changed.");
        }
    }

    static void json(ObjectNode n, TaskView t) {
        n.put("runId", t.runId().toString());
        n.put("messageId", t.message().toString());
        n.put("parentRunId", t.parentRunId().toString());
        n.put("name", t.name());
        n.put("token", t.token());
        n.put("key", t.key().orElse(null));
        n.put("state", t.state().name());
        n.put("createdAt", t.createdAt().toString());
        n.put("deadline", t.deadline().map(Instant::toString).orElse(null));
        n.put("settledAt", t.settledAt().map(Instant::toString).orElse(null));
        n.put("settledBy", t.settledBy().orElse(null));
        n.put("failure", t.failure().orElse(null));
    }

    static String age(Instant since, Instant now) {
        Duration d = Duration.between(since, now);
        if (d.isNegative()) {
            return "0s";
        }
        return d.toDays() > 0
                ? d.toDays() + "d"
                : d.toHours() > 0
                        ? d.toHours() + "h"
                        : d.toMinutes() > 0 ? d.toMinutes() + "m" : d.toSeconds() + "s";
    }

    /** Refusals and bad input are the request failing (exit 1), with Coop's message. */
    static <T> T operate(Supplier<T> operation) {
        try {
            return operation.get();
        } catch (CoopValidationException | TaskRefusedException e) {
            throw new CliException(CoopCli.EXIT_FAILURE, e.getMessage(), e);
        }
    }
}
