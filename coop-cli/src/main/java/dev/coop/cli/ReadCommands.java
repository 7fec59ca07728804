package dev.coop.cli;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.coop.MessageId;
import dev.coop.RunStatus;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.Event;
import dev.coop.inspect.Hierarchy;
import dev.coop.inspect.ParkedRun;
import dev.coop.inspect.RunQuery;
import dev.coop.inspect.RunSummary;
import dev.coop.inspect.RunView;
import dev.coop.render.TerminalText;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** The subcommands of {@code coop} that read: trees, event logs, runs, parked runs, schedules and joins. */
final class ReadCommands {
    private ReadCommands() {
    }

    @Command(name = "tree", mixinStandardHelpOptions = true, description = "Print the cooperation tree below a message: every run, its steps, the runs they caused,"
            + " and for failures the distributed stack trace and what was compensated.")
    static final class Tree extends Commands.Base {
        @Parameters(paramLabel = "<message-id>", arity = "0..1", description = "The id of the message (a UUID)")
        MessageId message;

        @Option(names = "--run", paramLabel = "<run-id>", description = "Instead of a message: the tree below this run"
                + " (run ids: coop runs, coop parked, coop tree --ids)")
        java.util.UUID run;

        @Option(names = "--frames", description = "Show the stack frames of failures")
        boolean frames;

        @Option(names = "--ids", description = "Show the id of every run")
        boolean ids;

        @Option(names = "--payloads", description = "Also each run's payload and result, as JSON (masked by --mask,"
                + " cut at --max-chars); in JSON, as the fields payload and result of each run")
        boolean payloads;

        @Option(names = "--mask", paramLabel = "<fields>", description = "With --payloads: field names whose values"
                + " show as ***, comma-separated, * for any characters (password,*token*); default $COOP_MASK")
        String mask;

        @Option(names = "--max-chars", paramLabel = "<n>", defaultValue = "2000", description = "With --payloads:"
                + " characters of each value shown (default ${DEFAULT-VALUE}; 0 for all)")
        int maxChars;

        @Override
        public void run() {
            if ((message == null) == (run == null)) {
                throw new CliException(CoopCli.EXIT_USAGE, "Give either a message id or --run <run-id>");
            }
            if (maxChars < 0) {
                throw new CliException(CoopCli.EXIT_USAGE, "--max-chars must be 0 (all) or more, was " + maxChars);
            }
            var text = new dev.coop.render.TextRenderer(cli.renderOptions().withFrames(frames).withIds(ids));
            Payloads io = payloads
                    ? new Payloads(database().client,
                            dev.coop.render.JsonMask.parse(mask != null ? mask : System.getenv("COOP_MASK")), maxChars)
                    : null;
            if (run != null) {
                RunView view = Commands.operate(() -> database().client.tree(new dev.coop.Lineage(List.of(run))));
                print(cli.json ? cli.jsonRenderer().run(view) : null, text.render(view), List.of(view), io);
                return;
            }
            Hierarchy tree = database().client.tree(message);
            print(cli.json ? cli.jsonRenderer().hierarchy(tree) : null, text.render(tree), tree.runs(), io);
        }

        private void print(com.fasterxml.jackson.databind.JsonNode json, String text, List<RunView> roots,
                Payloads io) {
            if (json != null) {
                if (io != null) {
                    io.addTo(json);
                }
                cli.out().println(cli.jsonRenderer().write(json));
            } else {
                cli.out().print(text + (io == null ? "" : io.lines(roots)));
            }
        }
    }

    @Command(name = "events", mixinStandardHelpOptions = true, description = "Print the event log of the hierarchy below a message, in the order it was written.")
    static final class Events extends Commands.Base {
        @Parameters(paramLabel = "<message-id>", description = "The id of the message (a UUID)")
        MessageId message;

        @Option(names = "--after", paramLabel = "<event-id>", defaultValue = "0", description = "Only events after this id (for the next page)")
        long after;

        @Option(names = "--limit", paramLabel = "<n>", defaultValue = "10000", description = "At most this many events (default ${DEFAULT-VALUE}, at most 100000)")
        int limit;

        @Override
        public void run() {
            Database db = database();
            List<Event> events = Commands.operate(() -> db.client.events(message, after, limit));
            if (events.isEmpty() && after == 0) {
                throw new CliException(CoopCli.EXIT_FAILURE,
                        "No message " + message + " in schema '" + db.schema + "'");
            }
            if (events.size() == limit) {
                cli.err().println("(" + limit + " events shown; later ones: --after " + events.getLast().id() + ")");
            }
            cli.out()
                    .print(cli.json ? cli.jsonRenderer().renderEvents(events) + "\n" : cli.text().renderEvents(events));
        }
    }

    @Command(name = "runs", mixinStandardHelpOptions = true, description = "List runs, newest first, by status, saga, topic and age.")
    static final class Runs extends Commands.Base {
        @Option(names = "--status", paramLabel = "<status>", converter = Converters.StatusConverter.class, description = "RUNNABLE, WAITING, PARKED, HELD, COMMITTED, ROLLED_BACK or ROLLBACK_FAILED")
        RunStatus status;

        @Option(names = "--saga", paramLabel = "<saga>", description = "Only runs of this saga")
        String saga;

        @Option(names = "--topic", paramLabel = "<topic>", description = "Only runs handling messages of this topic")
        String topic;

        @Option(names = "--since", paramLabel = "<time>", converter = Converters.TimeConverter.class, description = "Only runs created since then: an age (30s, 15m, 2h, 7d), a date (2026-05-01) or an"
                + " ISO-8601 time (2026-05-01T08:00:00Z)")
        OffsetDateTime since;

        @Option(names = "--before", paramLabel = "<time>", converter = Converters.TimeConverter.class, description = "Only runs created before then (the next page: the CREATED of the last run listed)")
        OffsetDateTime before;

        @Option(names = "--limit", paramLabel = "<n>", defaultValue = "50", description = "At most this many runs, 1 to "
                + RunQuery.MAX_LIMIT + " (default: ${DEFAULT-VALUE})")
        int limit;

        @Option(names = "--summary", description = "One line: how many runs match, by status (all of them, whatever --limit)")
        boolean summary;

        @Option(names = "--key", paramLabel = "<business-key>", description = "Only runs of messages launched with"
                + " this business key")
        String businessKey;

        @Option(names = "--tag", paramLabel = "<tag>", description = "Only runs of messages launched with this tag")
        String tag;

        @Override
        public void run() {
            RunQuery query;
            try {
                query = RunQuery.newest().limit(limit);
            } catch (CoopValidationException e) {
                throw new CliException(CoopCli.EXIT_USAGE, "--limit: " + e.getMessage());
            }
            query = status == null ? query : query.status(status);
            query = saga == null ? query : query.saga(saga);
            query = topic == null ? query : query.topic(topic);
            query = since == null ? query : query.since(since);
            query = before == null ? query : query.before(before);
            query = businessKey == null ? query : query.businessKey(businessKey);
            query = tag == null ? query : query.tag(tag);
            if (summary) { // every matching run, counted by the database: not only the first --limit
                java.util.Map<RunStatus, Long> counts = database().client.countRuns(query);
                long total = counts.values().stream().mapToLong(Long::longValue).sum();
                if (cli.json) {
                    ObjectNode n = JsonNodeFactory.instance.objectNode();
                    n.put("total", total);
                    ObjectNode by = n.putObject("byStatus");
                    counts.forEach((s, c) -> by.put(s.name(), c));
                    cli.out().println(cli.jsonRenderer().write(n));
                    return;
                }
                cli.out().println(total + " run" + (total == 1 ? "" : "s") + (counts.isEmpty()
                        ? ""
                        : ": " + String.join(", ", counts.entrySet().stream().map(e -> e.getValue() + " "
                                + e.getKey().name().toLowerCase(Locale.ROOT).replace('_', ' ')).toList())));
                return;
            }
            List<RunSummary> runs = database().client.runs(query);
            if (cli.json) {
                cli.out().println(cli.jsonRenderer().renderRuns(runs));
                return;
            }
            if (runs.isEmpty()) {
                cli.out().println("No runs match.");
                return;
            }
            cli.out().print(cli.text().renderRuns(runs));
            if (runs.size() == limit) {
                cli.err().println("(" + limit + " runs shown; older ones: --before "
                        + runs.getLast().createdAt().withOffsetSameInstant(ZoneOffset.UTC) + ")");
            }
        }
    }

    @Command(name = "parked", mixinStandardHelpOptions = true, description = "List parked runs (retries exhausted, or a step their saga no longer has), oldest first.")
    static final class Parked extends Commands.Base {
        @Option(names = "--limit", paramLabel = "<n>", defaultValue = "100", description = "At most this many runs (default: ${DEFAULT-VALUE})")
        int limit;

        @Override
        public void run() {
            if (limit < 1) {
                throw new CliException(CoopCli.EXIT_USAGE, "--limit must be positive, was " + limit);
            }
            List<ParkedRun> parked = database().client.parkedRuns(limit);
            if (cli.json) {
                cli.out().println(cli.jsonRenderer().renderParked(parked));
            } else if (parked.isEmpty()) {
                cli.out().println("No parked runs.");
            } else {
                cli.out().print(cli.text().renderParked(parked));
            }
        }
    }

    @Command(name = "schedules", mixinStandardHelpOptions = true, description = "List the schedules (periodic"
            + " launches): their times, next due time, and the last message each launched.")
    static final class Schedules extends Commands.Base {
        @Override
        public void run() {
            List<dev.coop.schedule.ScheduleSummary> all = database().client.schedules();
            if (cli.json) {
                com.fasterxml.jackson.databind.node.ArrayNode array = JsonNodeFactory.instance.arrayNode();
                for (dev.coop.schedule.ScheduleSummary s : all) {
                    ObjectNode n = array.addObject();
                    n.put("name", s.name());
                    n.put("topic", s.topic());
                    n.put("schedule", s.schedule().toString());
                    n.put("paused", s.paused());
                    n.put("nextDue", Commands.time(s.nextDue()));
                    n.put("lastFiredAt", Commands.time(s.lastFiredAt()));
                    n.put("lastMessage", s.lastMessage() == null ? null : s.lastMessage().toString());
                    n.put("skipped", s.skipped());
                }
                cli.out().println(cli.jsonRenderer().write(array));
            } else if (all.isEmpty()) {
                cli.out().println("No schedules.");
            } else {
                cli.out().printf("%-24s %-24s %-26s %-22s %s%n", "NAME", "TOPIC", "NEXT DUE", "SKIPPED", "SCHEDULE");
                for (dev.coop.schedule.ScheduleSummary s : all) {
                    cli.out().printf("%-24s %-24s %-26s %-22s %s%n", TerminalText.escape(s.name()),
                            TerminalText.escape(s.topic()),
                            s.paused() ? "paused" : String.valueOf(Commands.time(s.nextDue())), s.skipped(),
                            TerminalText.escape(String.valueOf(s.schedule())));
                }
            }
        }
    }

    @Command(name = "join", mixinStandardHelpOptions = true, description = "Show a join: its status, counters and"
            + " members.")
    static final class Join extends Commands.Base {
        @Parameters(paramLabel = "<join-id>", description = "The id of the join (a UUID)")
        dev.coop.join.JoinId join;

        @Override
        public void run() {
            dev.coop.join.JoinView v = Commands.operate(() -> database().client.joins().get(join));
            if (cli.json) {
                cli.out().println(cli.jsonRenderer().write(
                        dev.coop.internal.store.Json.defaultMapper().valueToTree(v)));
                return;
            }
            cli.out().printf("Join %s%s: %s, %d of %d attached, %d completed, %d failed%s%n", v.id(),
                    v.key() == null ? "" : " (" + TerminalText.escape(v.key()) + ")", v.status(), v.attached(),
                    v.expected(),
                    v.completed(), v.failed(),
                    v.timeoutAt() == null ? "" : ", times out at " + Commands.time(v.timeoutAt()));
            for (dev.coop.join.JoinView.Member m : v.members()) {
                cli.out().printf("  %s  %s%s%n", m.message(), m.state(), m.reported() ? " (reported)" : "");
            }
            if (v.outcomeMessage() != null) {
                cli.out().println("Published " + v.outcomeMessage() + " on '" + TerminalText.escape(
                        v.status() == dev.coop.join.JoinStatus.COMPLETED ? v.onCompleteTopic() : v.onFailTopic())
                        + "'");
            }
        }
    }
}
