package dev.coop.cli;

import dev.coop.dashboard.DashboardServer;
import java.util.concurrent.CountDownLatch;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.coop.CancelResult;
import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.Event;
import dev.coop.inspect.Hierarchy;
import dev.coop.MessageId;
import dev.coop.PruneResult;
import dev.coop.inspect.ParkedRun;
import dev.coop.inspect.RunQuery;
import dev.coop.RunStatus;
import dev.coop.inspect.RunSummary;
import dev.coop.inspect.RunView;
import dev.coop.render.TerminalText;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeParseException;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.Command;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.TypeConversionException;

/** The subcommands of {@code coop}. */
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

    @Command(name = "tree", mixinStandardHelpOptions = true, description = "Print the cooperation tree below a message: every run, its steps, the runs they caused,"
            + " and for failures the distributed stack trace and what was compensated.")
    static final class Tree extends Base {
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
                RunView view = operate(() -> database().client.tree(new dev.coop.Lineage(List.of(run))));
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
    static final class Events extends Base {
        @Parameters(paramLabel = "<message-id>", description = "The id of the message (a UUID)")
        MessageId message;

        @Option(names = "--after", paramLabel = "<event-id>", defaultValue = "0", description = "Only events after this id (for the next page)")
        long after;

        @Option(names = "--limit", paramLabel = "<n>", defaultValue = "10000", description = "At most this many events (default ${DEFAULT-VALUE}, at most 100000)")
        int limit;

        @Override
        public void run() {
            Database db = database();
            List<Event> events = operate(() -> db.client.events(message, after, limit));
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
    static final class Runs extends Base {
        @Option(names = "--status", paramLabel = "<status>", converter = StatusConverter.class, description = "RUNNABLE, WAITING, PARKED, HELD, COMMITTED, ROLLED_BACK or ROLLBACK_FAILED")
        RunStatus status;

        @Option(names = "--saga", paramLabel = "<saga>", description = "Only runs of this saga")
        String saga;

        @Option(names = "--topic", paramLabel = "<topic>", description = "Only runs handling messages of this topic")
        String topic;

        @Option(names = "--since", paramLabel = "<time>", converter = TimeConverter.class, description = "Only runs created since then: an age (30s, 15m, 2h, 7d), a date (2026-05-01) or an"
                + " ISO-8601 time (2026-05-01T08:00:00Z)")
        OffsetDateTime since;

        @Option(names = "--before", paramLabel = "<time>", converter = TimeConverter.class, description = "Only runs created before then (the next page: the CREATED of the last run listed)")
        OffsetDateTime before;

        @Option(names = "--limit", paramLabel = "<n>", defaultValue = "50", description = "At most this many runs, 1 to "
                + RunQuery.MAX_LIMIT + " (default: ${DEFAULT-VALUE})")
        int limit;

        @Option(names = "--summary", description = "One line: how many runs match, by status (of at most --limit runs)")
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
            List<RunSummary> runs = database().client.runs(query);
            if (summary) {
                java.util.Map<RunStatus, Long> counts = new java.util.EnumMap<>(RunStatus.class);
                runs.forEach(r -> counts.merge(r.status(), 1L, Long::sum));
                cli.out().println(runs.size() + (runs.size() == limit ? "+" : "") + " runs" + (counts.isEmpty()
                        ? ""
                        : ": " + String.join(", ", counts.entrySet().stream().map(e -> e.getValue() + " "
                                + e.getKey().name().toLowerCase(Locale.ROOT).replace('_', ' ')).toList())));
                return;
            }
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
    static final class Parked extends Base {
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

    @Command(name = "retry", mixinStandardHelpOptions = true, description = "Retry a parked run's step now, from"
            + " attempt 1.")
    static final class Retry extends Base {
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
                resolved(cli, run, operate(() -> database().client.retryNow(run)), "will retry its step now");
                return;
            }
            long count = operate(() -> database().client.countParked(saga));
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
            long retried = operate(() -> database().client.retryParked(saga, who, reason));
            cli.out().println("Retried " + retried + " parked run" + (retried == 1 ? "" : "s") + " of saga " + saga
                    + " (from attempt 1); audited as " + who);
        }
    }

    @Command(name = "mark-done", mixinStandardHelpOptions = true, description = "Treat a parked run's step as done"
            + " without running it; the run goes on with its next step.")
    static final class MarkDone extends Base {
        @Parameters(paramLabel = "<run-id>", description = "The id of the parked run (a UUID; see: coop parked)")
        java.util.UUID run;

        @Override
        public void run() {
            resolved(cli, run, operate(() -> database().client.markStepDone(run)),
                    "goes on as if its step had succeeded");
        }
    }

    @Command(name = "schedules", mixinStandardHelpOptions = true, description = "List the schedules (periodic"
            + " launches): their times, next due time, and the last message each launched.")
    static final class Schedules extends Base {
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
                    n.put("nextDue", time(s.nextDue()));
                    n.put("lastFiredAt", time(s.lastFiredAt()));
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
                            s.paused() ? "paused" : String.valueOf(time(s.nextDue())), s.skipped(),
                            TerminalText.escape(String.valueOf(s.schedule())));
                }
            }
        }
    }

    @Command(name = "join", mixinStandardHelpOptions = true, description = "Show a join: its status, counters and"
            + " members.")
    static final class Join extends Base {
        @Parameters(paramLabel = "<join-id>", description = "The id of the join (a UUID)")
        dev.coop.join.JoinId join;

        @Override
        public void run() {
            dev.coop.join.JoinView v = operate(() -> database().client.joins().get(join));
            if (cli.json) {
                cli.out().println(cli.jsonRenderer().write(
                        dev.coop.internal.store.Json.defaultMapper().valueToTree(v)));
                return;
            }
            cli.out().printf("Join %s%s: %s, %d of %d attached, %d completed, %d failed%s%n", v.id(),
                    v.key() == null ? "" : " (" + TerminalText.escape(v.key()) + ")", v.status(), v.attached(),
                    v.expected(),
                    v.completed(), v.failed(), v.timeoutAt() == null ? "" : ", times out at " + time(v.timeoutAt()));
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

    private static String time(OffsetDateTime t) {
        return t == null ? null : t.withOffsetSameInstant(ZoneOffset.UTC).toString();
    }

    private static void resolved(CoopCli cli, java.util.UUID run, boolean done, String what) {
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

    @Command(name = "cancel", mixinStandardHelpOptions = true, description = "Cancel everything below a message: each run gives up at its next step boundary and rolls"
            + " back, running its compensations.")
    static final class Cancel extends Base {
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
            if (selection.given() == (message != null)) {
                throw new CliException(CoopCli.EXIT_USAGE, "Give either a message id, or a selection (--saga <saga>"
                        + " and filters)");
            }
            if (message == null) {
                selection.run(cli, database().client, true, reason);
                return;
            }
            requireReason(reason);
            CancelResult result = operate(() -> database().client.cancel(message, reason));
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

    @Command(name = "prune", mixinStandardHelpOptions = true, description = "Delete finished hierarchies (messages, events,"
            + " runs) whose root runs all finished longer ago than --older-than; anything runnable, sleeping, waiting or"
            + " parked is kept.")
    static final class Prune extends Base {
        @Option(names = "--older-than", required = true, paramLabel = "<age>", converter = AgeConverter.class, description = "30s, 15m, 2h or 30d")
        Duration olderThan;

        @Option(names = "--dry-run", description = "Only say how many hierarchies would go, and some of their ids")
        boolean dryRun;

        @Override
        public void run() {
            PruneResult r = operate(() -> dryRun
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

    @Command(name = "rollback", mixinStandardHelpOptions = true, description = "Undo a finished hierarchy: every run below the message rolls back its whole history,"
            + " children first, running compensations.")
    static final class Rollback extends Base {
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
            if (selection.given() == (message != null)) {
                throw new CliException(CoopCli.EXIT_USAGE, "Give either a message id, or a selection (--saga <saga>"
                        + " and filters)");
            }
            if (message == null) {
                selection.run(cli, database().client, false, reason);
                return;
            }
            requireReason(reason);
            operate(() -> {
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

    @Command(name = "dashboard", mixinStandardHelpOptions = true, description = "Serve the web dashboard (runs,"
            + " hierarchies with their timeline and stack trace, schedules, joins, audited actions) until Ctrl-C."
            + " Users come from COOP_DASHBOARD_USERS (name:password:role,... with role viewer or operator) and"
            + " COOP_DASHBOARD_TOKEN (an operator token); with neither, a random operator token is made and its"
            + " login link printed. COOP_DASHBOARD_KEYSTORE (and COOP_DASHBOARD_KEYSTORE_PASSWORD) serve HTTPS.")
    static final class Dashboard extends Base {
        @Option(names = "--port", paramLabel = "<port>", defaultValue = "8080", description = "Port (default ${DEFAULT-VALUE})")
        int port;

        @Option(names = "--bind", paramLabel = "<address>", defaultValue = "127.0.0.1", description = "Address to listen on (default ${DEFAULT-VALUE}: this machine only)")
        String bind;

        @Override
        public void run() {
            DashboardServer.Builder builder;
            try {
                builder = DashboardServer.builder(database().client).port(port).bind(bind)
                        .fromEnvironment(cli.env());
            } catch (IllegalArgumentException e) {
                throw new CliException(CoopCli.EXIT_USAGE, e.getMessage(), e);
            }
            String token = builder.ensureAccess();
            DashboardServer server;
            try {
                server = builder.start();
            } catch (java.io.IOException e) {
                throw new CliException(CoopCli.EXIT_FAILURE, "Could not listen on " + bind + ":" + port + ": "
                        + e.getMessage(), e);
            }
            CountDownLatch stopped = new CountDownLatch(1);
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                server.close();
                stopped.countDown();
            }));
            cli.out().println(DashboardServer.started(server, token));
            cli.out().println("Press Ctrl-C to stop.");
            cli.out().flush();
            try {
                stopped.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                server.close();
            }
        }
    }

    @Command(name = "completion", mixinStandardHelpOptions = true, description = "Print a bash/zsh completion script"
            + " for coop: source <(coop completion)")
    static final class Completion implements Runnable {
        @ParentCommand
        CoopCli cli;

        @Override
        public void run() {
            cli.out().print(picocli.AutoComplete.bash("coop", cli.spec.commandLine()));
        }
    }

    @Command(name = "migrate", mixinStandardHelpOptions = true, description = "Create or update Coop's tables in the schema (under an advisory lock; safe while engines"
            + " run). With --print, only print the SQL, for teams that apply migrations themselves.")
    static final class Migrate implements Runnable {
        @ParentCommand
        CoopCli cli;

        @Option(names = "--print", description = "Print the SQL of every migration instead of applying it")
        boolean print;

        @Override
        public void run() {
            if (print) {
                try {
                    cli.out().print(Coop.migrationSql(cli.schema));
                } catch (CoopValidationException e) {
                    throw new CliException(CoopCli.EXIT_USAGE, e.getMessage(), e);
                }
                return;
            }
            Database db = cli.database();
            Integer before = db.schemaVersion();
            try {
                CoopClient.builder(db.dataSource).schema(db.schema).migrate(true).build();
            } catch (dev.coop.failure.CoopStoreException e) {
                if (e.getCause() instanceof java.sql.SQLException sql) {
                    throw db.failure("migrate schema '" + db.schema + "'", sql);
                }
                throw e;
            }
            int after = db.schemaVersion();
            int was = before == null ? 0 : before;
            if (cli.json) {
                ObjectNode n = JsonNodeFactory.instance.objectNode();
                n.put("schema", db.schema);
                n.put("versionBefore", was);
                n.put("version", after);
                cli.out().println(cli.jsonRenderer().write(n));
                return;
            }
            cli.out().println(after == was
                    ? "Schema '" + db.schema + "' is up to date (version " + after + ")."
                    : "Schema '" + db.schema + "' migrated from version " + was + " to " + after + ".");
        }
    }

    private interface Operation<T> {
        T run();
    }

    /** An operator's request; refusals (unknown id, still running, ...) are failures, not usage errors. */
    /** A single cancel or rollback needs a reason (picocli's own words, as when the option was required). */
    static void requireReason(String reason) {
        if (reason == null) {
            throw new CliException(CoopCli.EXIT_USAGE, "Missing required option: '--reason=<text>'");
        }
    }

    private static <T> T operate(Operation<T> operation) {
        try {
            return operation.run();
        } catch (CoopValidationException e) {
            throw new CliException(CoopCli.EXIT_FAILURE, e.getMessage(), e);
        }
    }

    static final class StatusConverter implements ITypeConverter<RunStatus> {
        @Override
        public RunStatus convert(String value) {
            try {
                return RunStatus.valueOf(value.strip().toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException("'" + value + "' is not a run status (one of "
                        + java.util.Arrays.toString(RunStatus.values()) + ")");
            }
        }
    }

    /** An age: a number of seconds, minutes, hours or days ({@code 30s}, {@code 15m}, {@code 2h}, {@code 30d}). */
    static final class AgeConverter implements ITypeConverter<Duration> {
        private static final Pattern AGE = Pattern.compile("(\\d{1,9})\\s*(s|m|h|d)");

        /** The age {@code value} names, or null when it is not one. */
        static Duration parse(String value) {
            Matcher m = AGE.matcher(value.strip().toLowerCase(Locale.ROOT));
            if (!m.matches()) {
                return null;
            }
            long n = Long.parseLong(m.group(1));
            return switch (m.group(2)) {
                case "s" -> Duration.ofSeconds(n);
                case "m" -> Duration.ofMinutes(n);
                case "h" -> Duration.ofHours(n);
                default -> Duration.ofDays(n);
            };
        }

        @Override
        public Duration convert(String value) {
            Duration age = parse(value);
            if (age == null) {
                throw new TypeConversionException("'" + value + "' is not an age: a number (at most 9 digits) and"
                        + " s, m, h or d, e.g. 30d");
            }
            return age;
        }
    }

    /** An age ({@code 15m}), a date, or an ISO-8601 time with offset (or {@code Z}). */
    static final class TimeConverter implements ITypeConverter<OffsetDateTime> {
        @Override
        public OffsetDateTime convert(String value) {
            Duration age = AgeConverter.parse(value);
            if (age != null) {
                return OffsetDateTime.now(ZoneOffset.UTC).minus(age);
            }
            try {
                return OffsetDateTime.parse(value.strip());
            } catch (DateTimeParseException notOffset) {
                try {
                    return Instant.parse(value.strip()).atOffset(ZoneOffset.UTC);
                } catch (DateTimeParseException notInstant) {
                    try {
                        return LocalDate.parse(value.strip()).atStartOfDay().atOffset(ZoneOffset.UTC);
                    } catch (DateTimeParseException notDate) {
                        throw new TypeConversionException("'" + value + "' is neither an age (30s, 15m, 2h, 7d),"
                                + " a date (2026-05-01) nor an ISO-8601 time (2026-05-01T08:00:00Z)");
                    }
                }
            }
        }
    }
}
