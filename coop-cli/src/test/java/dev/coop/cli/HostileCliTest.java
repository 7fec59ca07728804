package dev.coop.cli;

import static dev.coop.cli.CoopCliTest.coopWith;
import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Coop;
import dev.coop.CoopEngine;
import dev.coop.MessageId;
import dev.coop.inspect.Outcome;
import dev.coop.Saga;
import dev.coop.Topic;
import dev.coop.cli.CoopCliTest.Result;
import dev.coop.test.CoopDatabase;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The command line never echoes a password, never prints raw control sequences, and refuses sloppy input. */
class HostileCliTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    record Text(String text) {
    }

    static final String SECRET = "s3cret-Pw-42";

    private Map<String, String> env(String url) {
        Map<String, String> env = new HashMap<>();
        env.put("COOP_JDBC_URL", url);
        return env;
    }

    private Result database(String... args) {
        Map<String, String> env = env(db.jdbcUrl());
        env.put("COOP_JDBC_USER", db.server().user());
        env.put("COOP_JDBC_PASSWORD", db.server().password());
        return coopWith(env, args);
    }

    @Test
    void passwords_in_urls_are_masked_in_errors_and_stack_traces() {
        for (String url : new String[]{"jdbc:postgresql://localhost:1/x?user=bob&password=" + SECRET,
                "jdbc:postgresql://localhost:1/x?sslpassword=" + SECRET + "&password=" + SECRET,
                "jdbc:postgresql://bob:" + SECRET + "@localhost:1/x", "postgresql://bob:" + SECRET + "@localhost/x",
                "jdbc:mysql://localhost/x?password=" + SECRET}) {
            for (String verbose : new String[]{"--color=never", "--verbose"}) {
                Result r = coopWith(env(url), "runs", verbose);
                assertThat(r.exit()).as(url).isNotZero();
                assertThat(r.err()).as(url).isNotEmpty().doesNotContain(SECRET);
                assertThat(r.out()).doesNotContain(SECRET);
            }
        }
        Result r = coopWith(env("jdbc:postgresql://localhost:1/x?password=" + SECRET), "runs");
        assertThat(r.err()).contains("password=***");
    }

    @Test
    void the_password_given_by_option_or_environment_is_never_printed() {
        Map<String, String> env = env("jdbc:postgresql://localhost:1/" + SECRET);
        env.put("COOP_JDBC_PASSWORD", SECRET);
        Result r = coopWith(env, "runs", "--verbose");
        assertThat(r.exit()).isEqualTo(CoopCli.EXIT_UNREACHABLE);
        assertThat(r.err()).doesNotContain(SECRET).contains("***");
    }

    @Test
    void malformed_ids_and_colour_modes_are_usage_errors() {
        assertThat(database("tree", "1-1-1-1-1").exit()).isEqualTo(CoopCli.EXIT_USAGE);
        assertThat(database("retry", "1-1-1-1-1").exit()).isEqualTo(CoopCli.EXIT_USAGE);
        assertThat(database("retry", "1-1-1-1-1").err()).contains("Not a run id");
        assertThat(database("join", "1-1-1-1-1").exit()).isEqualTo(CoopCli.EXIT_USAGE);
        Result rainbow = coopWith(Map.of(), "migrate", "--print", "--color", "rainbow");
        assertThat(rainbow.exit()).isEqualTo(CoopCli.EXIT_USAGE);
        assertThat(rainbow.err()).contains("rainbow");
        assertThat(coopWith(Map.of(), "migrate", "--print", "--color", "NEVER").exit()).isZero();
    }

    @Test
    void control_sequences_in_failure_messages_are_printed_escaped() {
        Topic<Text> topic = Topic.of("cli-hostile", Text.class);
        Saga<Text> saga = Saga.on(topic, "cli-hostile").step("fail", step -> {
            throw new IllegalStateException(step.payload().text());
        }).build();
        try (CoopEngine engine = Coop.engine(db.dataSource()).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Text("\u001b]0;pwned\u0007\u001b[2Jgone"));
            assertThat(engine.client().awaitCompletion(id, Duration.ofSeconds(30))).isEqualTo(Outcome.ROLLED_BACK);
            for (String color : new String[]{"--color=never", "--color=always"}) {
                for (String[] command : new String[][]{{"tree", id.toString()}, {"events", id.toString()},
                        {"runs", "--saga", "cli-hostile"}}) {
                    String[] args = java.util.stream.Stream.concat(java.util.Arrays.stream(command),
                            java.util.stream.Stream.of(color)).toArray(String[]::new);
                    Result r = database(args);
                    assertThat(r.exit()).as(String.join(" ", args) + ": " + r.err()).isZero();
                    assertThat(r.out()).as(String.join(" ", args)).doesNotContain("\u0007", "\u001b]", "\u001b[2J")
                            .contains("\\u001B]0;pwned\\u0007");
                }
            }
        }
    }

    @Test
    void trees_a_thousand_levels_deep_print_as_json_and_text() {
        Topic<Integer> topic = Topic.of("cli-deep", Integer.class);
        Saga<Integer> deep = Saga.on(topic, "cli-deep").step("descend", step -> {
            if (step.payload() < 1_000) {
                step.launch(topic, step.payload() + 1);
            }
        }).build();
        try (CoopEngine engine = Coop.engine(db.dataSource()).register(deep).start()) {
            MessageId id = engine.client().launch(topic, 1);
            assertThat(engine.client().awaitCompletion(id, Duration.ofSeconds(120))).isEqualTo(Outcome.COMMITTED);
            Result json = database("tree", id.toString(), "--json");
            assertThat(json.exit()).as(json.err()).isZero();
            dev.coop.inspect.Hierarchy read = new dev.coop.render.JsonRenderer(false).readHierarchy(json.out());
            assertThat(read.runs().getFirst().flatten()).hasSize(1_000);
            Result text = database("tree", id.toString(), "--ascii");
            assertThat(text.exit()).as(text.err()).isZero();
        }
    }

    @Test
    void events_are_printed_in_pages() {
        Topic<Integer> topic = Topic.of("cli-paged", Integer.class);
        Topic<Integer> items = Topic.of("cli-paged-item", Integer.class);
        Saga<Integer> parent = Saga.on(topic, "cli-paged").step("fan-out", step -> {
            for (int i = 0; i < 30; i++) {
                step.launch(items, i);
            }
        }).build();
        Saga<Integer> item = Saga.on(items, "cli-paged-item").step("one", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(db.dataSource()).register(parent, item).start()) {
            MessageId id = engine.client().launch(topic, 1);
            assertThat(engine.client().awaitCompletion(id, Duration.ofSeconds(30))).isEqualTo(Outcome.COMMITTED);
            java.util.List<dev.coop.inspect.Event> all = engine.client().events(id);
            java.util.List<dev.coop.inspect.Event> paged = new java.util.ArrayList<>();
            long after = 0;
            for (java.util.List<dev.coop.inspect.Event> page; !(page = engine.client().events(id, after, 7))
                    .isEmpty();) {
                assertThat(page.size()).isLessThanOrEqualTo(7);
                paged.addAll(page);
                after = page.getLast().id();
            }
            assertThat(paged).isEqualTo(all);
            Result first = database("events", id.toString(), "--limit", "10", "--json");
            assertThat(first.exit()).as(first.err()).isZero();
            assertThat(new dev.coop.render.JsonRenderer(false).readEvents(first.out())).hasSize(10);
            assertThat(first.err()).contains("10 events shown; later ones: --after " + all.get(9).id());
            Result next = database("events", id.toString(), "--after", String.valueOf(all.get(9).id()), "--json");
            assertThat(new dev.coop.render.JsonRenderer(false).readEvents(next.out())).hasSize(all.size() - 10);
        }
    }

    @Test
    void comforts_tree_by_run_version_summary_and_completion() {
        Topic<Integer> topic = Topic.of("cli-comfort", Integer.class);
        Topic<Integer> items = Topic.of("cli-comfort-item", Integer.class);
        Saga<Integer> parent = Saga.on(topic, "cli-comfort").step("fan-out", step -> {
            step.launch(items, 1);
        }).build();
        Saga<Integer> item = Saga.on(items, "cli-comfort-item").step("one", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(db.dataSource()).register(parent, item).start()) {
            MessageId id = engine.client().launch(topic, 1);
            assertThat(engine.client().awaitCompletion(id, Duration.ofSeconds(30))).isEqualTo(Outcome.COMMITTED);
            var child = engine.client().tree(id).runs().getFirst().children().getFirst();
            Result byRun = database("tree", "--run", child.runId().toString());
            assertThat(byRun.exit()).as(byRun.err()).isZero();
            assertThat(byRun.out()).contains("cli-comfort-item").doesNotContain("fan-out");
            assertThat(database("tree").exit()).isEqualTo(CoopCli.EXIT_USAGE);
            Result summary = database("runs", "--saga", "cli-comfort-item", "--summary");
            assertThat(summary.out().strip()).isEqualTo("1 run: 1 committed");
        }
        Result version = coopWith(Map.of(), "--version");
        assertThat(version.exit()).isZero();
        assertThat(version.out()).startsWith("coop ");
        Result completion = coopWith(Map.of(), "completion");
        assertThat(completion.exit()).isZero();
        assertThat(completion.out()).contains("complete", "coop", "tree", "events");
    }

    record Item(int n) {
    }

    /**
     * coop tree of a step that caused 20,000 runs, in a JVM with a 32 MB heap: the read counts the fan-out instead
     * of loading it (runs and events), so it prints. The runs are added by SQL to the messages the step launched.
     */
    @Test
    void trees_of_large_fan_outs_print_with_a_small_heap() throws Exception {
        Topic<Item> items = Topic.of("cli-huge-item", Item.class);
        Saga<Item> parent = Saga.on(Topic.of("cli-huge", Item.class), "cli-huge").step("fan-out", step -> {
            for (int i = 0; i < 20_003; i++) {
                step.launch(items, new Item(i));
            }
        }).build();
        MessageId id;
        java.util.UUID parentRun;
        try (CoopEngine engine = Coop.engine(db.dataSource()).register(parent).start()) {
            id = engine.client().launch(parent.topic(), new Item(0));
            assertThat(engine.client().awaitCompletion(id, Duration.ofSeconds(60))).isEqualTo(Outcome.COMMITTED);
            parentRun = engine.client().tree(id).runs().getFirst().runId();
        }
        java.util.UUID failedRun;
        try (java.sql.Connection c = db.dataSource().getConnection();
                java.sql.PreparedStatement ps = c.prepareStatement("""
                        WITH kids AS (
                          SELECT e.message_id, coop.uuid_v7() AS run_id, e.lineage, row_number() OVER (ORDER BY e.id) n
                            FROM coop.event e
                           WHERE e.type = 'EMITTED' AND e.lineage[1] = ? AND e.lineage[cardinality(e.lineage)] = ?
                        ), runs AS (
                          INSERT INTO coop.run (id, message_id, saga, lineage, parent_id, parent_seq, status,
                                                steps_done, step_index, created_at, started_at, finished_at,
                                                root_id)
                          SELECT run_id, message_id, 'cli-huge-item', lineage || run_id, ?, 0,
                                 CASE WHEN n > 20000 THEN 'ROLLED_BACK' ELSE 'COMMITTED' END, 1, 1,
                                 clock_timestamp() + n * interval '1 microsecond', clock_timestamp(), clock_timestamp(),
                                 lineage[1]
                            FROM kids
                        ), events AS (
                          INSERT INTO coop.event (message_id, type, saga, engine, step, lineage, root_id)
                          SELECT k.message_id, t.type, 'cli-huge-item', 'sql', t.step, k.lineage || k.run_id,
                                 k.lineage[1]
                            FROM kids k CROSS JOIN (VALUES (1, 'SEEN', NULL), (2, 'SUSPENDED', 'one'),
                                                           (3, 'COMMITTED', 'one')) AS t(o, type, step)
                           ORDER BY k.n, t.o
                        )
                        SELECT run_id FROM kids ORDER BY n DESC LIMIT 1
                        """)) {
            ps.setObject(1, id.value());
            ps.setObject(2, parentRun);
            ps.setObject(3, parentRun);
            try (java.sql.ResultSet rs = ps.executeQuery()) {
                rs.next();
                failedRun = rs.getObject(1, java.util.UUID.class);
            }
        }
        Result tree = smallHeap("tree", id.toString(), "--color=never");
        assertThat(tree.exit()).as(tree.err()).isZero();
        assertThat(tree.out()).contains("launched 20003", "20003 runs of cli-huge-item: 20000 committed, 3 rolled back",
                "(counted, not listed: the runs that did not commit are shown)");
        assertThat(tree.out().lines().count()).isLessThan(40);
        Result json = smallHeap("tree", id.toString(), "--json");
        assertThat(json.exit()).as(json.err()).isZero();
        assertThat(json.out()).contains("\"total\" : 20003");
        Result subtree = smallHeap("tree", "--run", failedRun.toString(), "--color=never");
        assertThat(subtree.exit()).as(subtree.err()).isZero();
        assertThat(subtree.out()).contains("cli-huge-item on cli-huge-item  ROLLED_BACK");
    }

    /** An out-of-memory error while printing is a failure, said so, never a silent exit 0. */
    @Test
    void running_out_of_memory_is_a_failure() throws Exception {
        Topic<Item> items = Topic.of("cli-oom-item", Item.class);
        Saga<Item> parent = Saga.on(Topic.of("cli-oom", Item.class), "cli-oom").step("fan-out", step -> {
            for (int i = 0; i < 3_000; i++) {
                step.launch(items, new Item(i));
            }
        }).build();
        MessageId id;
        try (CoopEngine engine = Coop.engine(db.dataSource()).register(parent).start()) {
            id = engine.client().launch(parent.topic(), new Item(0));
            assertThat(engine.client().awaitCompletion(id, Duration.ofSeconds(60))).isEqualTo(Outcome.COMMITTED);
        }
        Result events = heap("-Xmx12m", "events", id.toString(), "--json", "--limit", "100000");
        assertThat(events.exit()).as(events.out()).isEqualTo(CoopCli.EXIT_FAILURE);
        assertThat(events.err()).contains("Out of memory");
    }

    /** Runs {@code coop args} in a JVM of its own with a 32 MB heap. */
    private Result smallHeap(String... args) throws Exception {
        String[] all = new String[args.length + 1];
        all[0] = "-Xmx32m";
        System.arraycopy(args, 0, all, 1, args.length);
        return heap(all);
    }

    /** Runs {@code coop args[1..]} in a JVM of its own with the heap option {@code args[0]}. */
    private Result heap(String... args) throws Exception {
        java.util.List<String> command = new java.util.ArrayList<>(java.util.List.of(
                ProcessHandle.current().info().command().orElse("java"), args[0], "-cp",
                System.getProperty("java.class.path"), CoopCli.class.getName()));
        command.addAll(java.util.List.of(args).subList(1, args.length));
        ProcessBuilder pb = new ProcessBuilder(command);
        pb.environment().put("COOP_JDBC_URL", db.jdbcUrl());
        pb.environment().put("COOP_JDBC_USER", db.server().user());
        pb.environment().put("COOP_JDBC_PASSWORD", db.server().password());
        java.nio.file.Path err = java.nio.file.Files.createTempFile("coop-cli", ".err");
        pb.redirectError(err.toFile());
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
        String errors = java.nio.file.Files.readString(err);
        java.nio.file.Files.delete(err);
        return new Result(p.exitValue(), out, errors);
    }
}
