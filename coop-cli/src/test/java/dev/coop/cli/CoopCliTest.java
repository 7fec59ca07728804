package dev.coop.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.CoopEngine;
import dev.coop.inspect.Hierarchy;
import dev.coop.MessageId;
import dev.coop.inspect.Outcome;
import dev.coop.RetryPolicy;
import dev.coop.inspect.RunQuery;
import dev.coop.RunStatus;
import dev.coop.inspect.RunSummary;
import dev.coop.Saga;
import dev.coop.Topic;
import dev.coop.render.JsonRenderer;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import dev.coop.test.StepGate;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import picocli.CommandLine;

/**
 * The {@code coop} command against a real database, in-process: every command's output, its JSON form, and the
 * errors (one line on standard error, an exit code, no stack trace unless --verbose).
 */
class CoopCliTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);
    static final JsonRenderer JSON = new JsonRenderer(true);

    record Order(String id, boolean fail) {
    }

    static final Topic<Order> ORDERS = Topic.of("cli-order", Order.class);
    static final Topic<Order> PAYMENTS = Topic.of("cli-payment", Order.class);
    static final Topic<Order> SLOW = Topic.of("cli-slow", Order.class);
    static final Topic<Order> PARKING = Topic.of("cli-parking", Order.class);

    static CoopEngine engine;
    static CoopClient client;
    static MessageId committed;
    static MessageId rolledBack;
    static final StepGate gate = new StepGate(WAIT);

    @BeforeAll
    static void startEngine() {
        Saga<Order> order = Saga.on(ORDERS, "cli-order-saga")
                .step("reserve", step -> step.launch(PAYMENTS, step.payload()))
                .compensateWith((step, cause) -> {
                })
                .step("confirm", step -> {
                })
                .build();
        Saga<Order> payment = Saga.on(PAYMENTS, "cli-payment-saga").step("charge", step -> {
            if (step.payload().fail()) {
                throw new IllegalStateException("Card declined for " + step.payload().id());
            }
        }).build();
        Saga<Order> slow = Saga.on(SLOW, "cli-slow-saga").step("wait", step -> gate.pass()).build();
        Saga<Order> parking = Saga.on(PARKING, "cli-parking-saga").step("call-bank", step -> {
            throw new java.io.IOException("Bank unreachable");
        }).retry(RetryPolicy.attempts(1).parkWhenExhausted()).build();
        engine = Coop.engine(db.dataSource()).register(order, payment, slow, parking).start();
        client = engine.client();
        committed = client.launch(ORDERS, new Order("o-1", false));
        rolledBack = client.launch(ORDERS, new Order("o-2", true));
        assertThat(client.awaitCompletion(committed, WAIT)).isEqualTo(Outcome.COMMITTED);
        assertThat(client.awaitCompletion(rolledBack, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
    }

    @AfterAll
    static void stopEngine() {
        gate.open();
        if (engine != null) {
            engine.close();
        }
    }

    record Result(int exit, String out, String err) {
    }

    /** Runs {@code coop args} with the test database in the environment, as a shell would set it. */
    static Result coop(String... args) {
        Map<String, String> env = new HashMap<>();
        env.put("COOP_JDBC_URL", db.jdbcUrl());
        env.put("COOP_JDBC_USER", db.server().user());
        env.put("COOP_JDBC_PASSWORD", db.server().password());
        return coopWith(env, args);
    }

    static Result coopWith(Map<String, String> env, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine commandLine = CoopCli.commandLine(env);
        commandLine.setOut(new PrintWriter(out, true));
        commandLine.setErr(new PrintWriter(err, true));
        int exit = commandLine.execute(args);
        return new Result(exit, out.toString(), err.toString());
    }

    // ---- dashboard

    @Test
    void dashboard_refuses_a_bad_port_or_user_before_listening() {
        Result port = coop("dashboard", "--port", "70000");
        assertThat(port.exit()).isEqualTo(CoopCli.EXIT_USAGE);
        assertThat(port.err()).contains("70000");
        Map<String, String> env = new HashMap<>();
        env.put("COOP_JDBC_URL", db.jdbcUrl());
        env.put("COOP_JDBC_USER", db.server().user());
        env.put("COOP_JDBC_PASSWORD", db.server().password());
        env.put("COOP_DASHBOARD_USERS", "alice:short:operator");
        Result user = coopWith(env, "dashboard", "--port", "0");
        assertThat(user.exit()).isEqualTo(CoopCli.EXIT_USAGE);
        assertThat(user.err()).contains("alice", "at least 8 characters");
        assertThat(coop("dashboard", "--help").out()).contains("--port", "--bind", "COOP_DASHBOARD_USERS");
    }

    // ---- saga versions

    @Test
    void saga_list_shows_stranded_versions_and_retire_is_refused_until_their_runs_finished() {
        Topic<Order> topic = Topic.of("cli-versioned", Order.class);
        Saga<Order> v2 = Saga.on(topic, "cli-versioned-saga").version(2).step("handle", step -> {
        }).build();
        try (CoopEngine registers = Coop.engine(db.dataSource()).name("cli-v2").workers(1).register(v2).start()) {
            assertThat(registers.id()).startsWith("cli-v2");
        }
        MessageId waiting = client.launch(topic, new Order("v-1", false)); // version 2, no engine has it now
        Result list = coop("saga", "list");
        assertThat(list.exit()).isZero();
        assertThat(list.out()).containsPattern(
                "cli-versioned-saga +2 +cli-versioned +yes +1 +none: its runs wait for an engine with version 2");
        assertThat(coop("saga", "list", "--json").out()).contains("\"stranded\" : true");
        Result refused = coop("saga", "retire", "cli-versioned-saga", "--version", "2");
        assertThat(refused.exit()).isEqualTo(CoopCli.EXIT_FAILURE);
        assertThat(refused.err()).contains("Cannot retire version 2 of saga 'cli-versioned-saga'",
                "1 unfinished run (1 runnable)");
        assertThat(coop("saga", "retire", "cli-versioned-saga", "--version", "7").err()).contains("not registered");
        assertThat(coop("saga", "retire", "cli-versioned-saga").exit()).isEqualTo(CoopCli.EXIT_USAGE);
        try (CoopEngine drains = Coop.engine(db.dataSource()).name("cli-v2").workers(1).register(v2).start()) {
            assertThat(client.awaitCompletion(waiting, WAIT)).isEqualTo(Outcome.COMMITTED);
        }
        Result retired = coop("saga", "retire", "cli-versioned-saga", "--version", "2");
        assertThat(retired.exit()).isZero();
        assertThat(retired.out()).contains("Retired version 2 of saga 'cli-versioned-saga'.");
        assertThat(coop("saga", "list").out()).doesNotContain("cli-versioned-saga");
    }

    // ---- tree

    @Test
    void tree_prints_the_hierarchy() {
        Result r = coop("tree", committed.toString(), "--ascii", "--color=never");
        assertThat(r.exit()).as(r.err()).isZero();
        assertThat(r.err()).isEmpty();
        assertThat(r.out()).startsWith("* cli-order  message " + committed).contains(
                "`- cli-order-saga on cli-order  COMMITTED", "+ reserve  step  coop-", "launched 1",
                "`- cli-payment-saga on cli-payment  COMMITTED", "+ confirm  step");
    }

    @Test
    void tree_of_a_failure_shows_the_distributed_stack_trace_and_the_compensations() {
        Result r = coop("tree", rolledBack.toString(), "--color=never");
        assertThat(r.exit()).as(r.err()).isZero();
        assertThat(r.out()).contains("ROLLED_BACK", "Distributed stack trace",
                "caused by IllegalStateException: Card declined for o-2  (in cli-payment-saga[coop-",
                "Compensations, in the order they ran", "1. cli-order-saga: reserve").doesNotContain("\u001b[");
        assertThat(coop("tree", rolledBack.toString(), "--frames").out()).contains("at dev.coop.cli.CoopCliTest");
        assertThat(coop("tree", rolledBack.toString(), "--color=always").out()).contains("\u001b[31mROLLED_BACK");
        assertThat(coop("tree", committed.toString(), "--ids").out()).contains("run " + client.tree(committed).runs()
                .getFirst().runId());
    }

    @Test
    void tree_with_payloads_shows_each_runs_payload_and_result_masked_and_cut() throws Exception {
        Result r = coop("tree", committed.toString(), "--payloads", "--mask", "ID", "--color=never");
        assertThat(r.exit()).as(r.err()).isZero();
        assertThat(r.out()).contains("Payloads and results", "cli-order-saga  run ", "cli-payment-saga  run ",
                "payload {\"id\":\"***\",\"fail\":false}", "result  -").doesNotContain("o-1");
        assertThat(coop("tree", committed.toString(), "--payloads").out()).contains("\"id\":\"o-1\"");
        assertThat(coop("tree", committed.toString(), "--payloads", "--max-chars", "5").out())
                .contains("payload {\"id\" ... (25 characters; --max-chars 0 shows all)");
        Result json = coop("tree", committed.toString(), "--json", "--payloads", "--mask", "fail");
        assertThat(json.exit()).as(json.err()).isZero();
        var tree = new com.fasterxml.jackson.databind.ObjectMapper().readTree(json.out());
        assertThat(tree.at("/runs/0/payload").asText()).isEqualTo("{\"id\":\"o-1\",\"fail\":\"***\"}");
        assertThat(tree.at("/runs/0/result").isNull()).isTrue();
        assertThat(coop("tree", committed.toString(), "--payloads", "--mask", "a b").exit()).isNotZero();
    }

    @Test
    void tree_as_json_reads_back_as_the_hierarchy() {
        Result r = coop("tree", committed.toString(), "--json");
        assertThat(r.exit()).as(r.err()).isZero();
        Hierarchy read = JSON.readHierarchy(r.out());
        assertThat(read).isEqualTo(client.tree(committed));
    }

    // ---- events

    @Test
    void events_prints_the_log_in_order() {
        Result r = coop("events", rolledBack.toString());
        assertThat(r.exit()).as(r.err()).isZero();
        List<String> lines = r.out().lines().toList();
        assertThat(lines.getFirst()).startsWith("ID").contains("TYPE", "SAGA", "STEP", "ENGINE", "EXCEPTION");
        assertThat(lines).hasSize(client.events(rolledBack).size() + 1);
        assertThat(r.out()).contains("ROLLING_BACK", "IllegalStateException: Card declined for o-2",
                "Rollback of reserve");
    }

    @Test
    void events_as_json_read_back() {
        Result r = coop("events", committed.toString(), "--json");
        assertThat(r.exit()).as(r.err()).isZero();
        assertThat(JSON.readEvents(r.out())).isEqualTo(client.events(committed));
    }

    // ---- prune

    @Test
    void prune_dry_run_counts_and_deletes_nothing() {
        Result r = coop("prune", "--older-than", "0s", "--dry-run");
        assertThat(r.exit()).as(r.err()).isZero();
        assertThat(r.out()).startsWith("Would delete ").contains("(dry run: nothing deleted)", committed.toString());
        assertThat(client.tree(committed).runs()).isNotEmpty();
        Result json = coop("prune", "--older-than", "0s", "--dry-run", "--json");
        assertThat(json.exit()).as(json.err()).isZero();
        assertThat(json.out()).contains("\"dryRun\" : true", "\"hierarchies\"");
    }

    @Test
    void prune_keeps_what_finished_within_the_age_and_refuses_a_bad_age() {
        Result r = coop("prune", "--older-than", "30d");
        assertThat(r.exit()).as(r.err()).isZero();
        assertThat(r.out()).startsWith("Deleted 0 hierarchies finished before ");
        assertThat(client.tree(committed).runs()).isNotEmpty();
        Result bad = coop("prune", "--older-than", "a month");
        assertThat(bad.exit()).isEqualTo(2);
        assertThat(bad.err()).contains("'a month' is not an age");
        assertThat(coop("prune").err()).contains("--older-than");
    }

    // ---- runs

    @Test
    void runs_lists_newest_first_with_filters() {
        Result all = coop("runs", "--saga", "cli-order-saga");
        assertThat(all.exit()).as(all.err()).isZero();
        assertThat(all.out().lines().toList()).hasSize(3).first().asString().startsWith("CREATED");
        assertThat(all.out().lines().skip(1).toList().getFirst()).contains(rolledBack.toString());

        Result failed = coop("runs", "--status", "rolled_back", "--topic", "cli-payment", "--since", "1h");
        assertThat(failed.exit()).as(failed.err()).isZero();
        assertThat(failed.out()).contains("ROLLED_BACK", "cli-payment-saga", "Card declined for o-2")
                .doesNotContain("COMMITTED");

        Result page = coop("runs", "--saga", "cli-order-saga", "--limit", "1");
        assertThat(page.out().lines().toList()).hasSize(2);
        assertThat(page.err()).contains("1 runs shown; older ones: --before ");
        String before = page.err().substring(page.err().indexOf("--before ") + 9, page.err().indexOf(')'));
        Result next = coop("runs", "--saga", "cli-order-saga", "--limit", "1", "--before", before);
        assertThat(next.exit()).as(next.err()).isZero();
        assertThat(next.out()).contains(committed.toString()).doesNotContain(rolledBack.toString());

        assertThat(coop("runs", "--since", "2999-01-01").out()).isEqualTo("No runs match." + System.lineSeparator());
        assertThat(coop("runs", "--since", "2999-01-01", "--json").out().strip()).isEqualTo("[ ]");
    }

    @Test
    void runs_as_json_read_back() {
        Result r = coop("runs", "--saga", "cli-payment-saga", "--json");
        assertThat(r.exit()).as(r.err()).isZero();
        List<RunSummary> runs = JSON.readRuns(r.out());
        assertThat(runs).isEqualTo(client.runs(RunQuery.newest().saga("cli-payment-saga")))
                .extracting(RunSummary::messageId).doesNotHaveDuplicates();
        assertThat(runs).extracting(RunSummary::status).contains(RunStatus.ROLLED_BACK, RunStatus.COMMITTED);
    }

    @Test
    void runs_rejects_bad_filters_as_usage_errors() {
        assertUsageError(coop("runs", "--status", "sleeping"), "'sleeping' is not a run status");
        assertUsageError(coop("runs", "--since", "yesterday"), "'yesterday' is neither an age");
        assertUsageError(coop("runs", "--limit", "0"), "limit must be between 1 and 1000");
    }

    // ---- parked

    @Test
    void parked_lists_parked_runs() {
        MessageId id = client.launch(PARKING, new Order("o-3", false));
        Await.until("the run to park", WAIT, () -> client.statuses(id).contains(RunStatus.PARKED));
        Result r = coop("parked");
        assertThat(r.exit()).as(r.err()).isZero();
        assertThat(r.out()).startsWith("SINCE").contains("cli-parking-saga", id.toString(),
                "IOException: Bank unreachable").contains("  call-bank  "); // the step's name, not its index
        Result json = coop("parked", "--json");
        assertThat(JSON.readParked(json.out())).anySatisfy(p -> assertThat(p.messageId()).isEqualTo(id));
    }

    @Test
    void every_parked_run_of_a_saga_is_retried_with_a_reason_after_a_dry_run_says_how_many() {
        MessageId id = client.launch(PARKING, new Order("o-8", false));
        Await.until("the run to park", WAIT, () -> client.statuses(id).contains(RunStatus.PARKED));
        Result dry = coop("retry", "--saga", "cli-parking-saga", "--parked", "--dry-run");
        assertThat(dry.exit()).as(dry.err()).isZero();
        assertThat(dry.out())
                .containsPattern("\\d+ parked runs? of saga cli-parking-saga would be retried \\(dry run");
        assertThat(client.statuses(id)).containsExactly(RunStatus.PARKED);
        assertUsageError(coop("retry", "--saga", "cli-parking-saga", "--parked"), "Say why with --reason");
        assertUsageError(coop("retry", "--saga", "cli-parking-saga"), "--saga <saga> --parked");

        Result r = coop("retry", "--saga", "cli-parking-saga", "--parked", "--reason", "bank is back", "--actor",
                "ops");
        assertThat(r.exit()).as(r.err()).isZero();
        assertThat(r.out()).containsPattern("Retried \\d+ parked runs? of saga cli-parking-saga").contains("ops");
        assertThat(client.audit(id)).anySatisfy(a -> {
            assertThat(a.action()).isEqualTo("retry-parked");
            assertThat(a.actor()).isEqualTo("ops");
            assertThat(a.reason()).isEqualTo("bank is back");
        });
    }

    @Test
    void parked_runs_are_retried_or_marked_done_and_other_runs_are_refused() {
        MessageId id = client.launch(PARKING, new Order("o-6", false));
        Await.until("the run to park", WAIT, () -> client.statuses(id).contains(RunStatus.PARKED));
        java.util.UUID run = client.parkedRuns(1000).stream().filter(p -> p.messageId().equals(id)).findFirst()
                .orElseThrow().runId();
        Result retry = coop("retry", run.toString());
        assertThat(retry.exit()).as(retry.err()).isZero();
        assertThat(retry.out()).contains("Run " + run + " will retry its step now");
        Await.until("the retried run to park again", WAIT,
                () -> client.parkedRuns(1000).stream().anyMatch(p -> p.runId().equals(run)));
        Result done = coop("mark-done", run.toString(), "--json");
        assertThat(done.exit()).as(done.err()).isZero();
        assertThat(done.out()).contains("\"result\" : \"RESOLVED\"");
        assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
        assertFailure(coop("retry", run.toString()), 1, "Run " + run + " is not parked; nothing changed");
    }

    // ---- schedules and joins

    @Test
    void schedules_lists_the_schedules_and_join_shows_a_join() {
        client.schedule("cli-nightly", ORDERS, new Order("nightly", false),
                dev.coop.schedule.Schedule.cron("0 3 * * *"));
        Result list = coop("schedules");
        assertThat(list.exit()).as(list.err()).isZero();
        assertThat(list.out()).startsWith("NAME").contains("cli-nightly", "cli-order", "cron '0 3 * * *' in UTC");
        Result json = coop("schedules", "--json");
        assertThat(json.out()).contains("\"name\" : \"cli-nightly\"", "\"paused\" : false");
        client.unschedule("cli-nightly");

        dev.coop.join.JoinId join = client.joins().start(dev.coop.join.JoinSpec.expecting(2).key("cli-join")
                .onComplete(Topic.of("cli-join-done", dev.coop.join.JoinResult.class))
                .onFail(Topic.of("cli-join-failed", dev.coop.join.JoinResult.class)));
        client.joins().attach(join, committed);
        Result shown = coop("join", join.toString());
        assertThat(shown.exit()).as(shown.err()).isZero();
        assertThat(shown.out()).contains("Join " + join + " (cli-join): OPEN, 1 of 2 attached, 1 completed, 0 failed",
                committed + "  COMPLETED");
        Result shownJson = coop("join", join.toString(), "--json");
        assertThat(shownJson.out()).contains("\"status\" : \"OPEN\"");
        assertFailure(coop("join", "not-a-uuid"), 2, "not-a-uuid");
        assertFailure(coop("join", java.util.UUID.randomUUID().toString()), 1, "join");
    }

    // ---- cancel and rollback

    @Test
    void cancel_requests_a_cancellation_and_says_what_happened() {
        MessageId id = client.launch(SLOW, new Order("o-4", false));
        gate.awaitArrivals(1, WAIT);
        Result r = coop("cancel", id.toString(), "--reason", "Customer called");
        assertThat(r.exit()).as(r.err()).isZero();
        assertThat(r.out()).startsWith("Cancellation requested: every run below message " + id);
        Result again = coop("cancel", id.toString(), "--reason", "Customer called twice", "--json");
        assertThat(again.out()).contains("\"result\" : \"ALREADY_REQUESTED\"");
        gate.open();
        assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
        assertThat(coop("tree", id.toString()).out()).contains("CancellationRequestedException: Customer called");
        assertThat(coop("cancel", id.toString(), "--reason", "late").out()).contains("had finished; nothing changed");
    }

    @Test
    void rollback_undoes_a_finished_hierarchy_and_refuses_to_do_it_twice() {
        MessageId id = client.launch(ORDERS, new Order("o-5", false));
        assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
        Result r = coop("rollback", id.toString(), "--reason", "Order entered twice");
        assertThat(r.exit()).as(r.err()).isZero();
        assertThat(r.out()).startsWith("Rollback requested: every run below message " + id);
        assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
        Result again = coop("rollback", id.toString(), "--reason", "again");
        assertFailure(again, 1, "Cannot roll back run ");
        assertThat(again.err()).contains("it already rolled back");
    }

    @Test
    void cancel_and_rollback_need_a_reason() {
        assertUsageError(coop("cancel", committed.toString()), "Missing required option: '--reason=<text>'");
        assertUsageError(coop("rollback", committed.toString()), "Missing required option: '--reason=<text>'");
    }

    // ---- migrate

    @Test
    void migrate_print_outputs_the_sql_without_a_database() {
        Result r = coopWith(Map.of(), "migrate", "--print", "--schema", "billing_coop");
        assertThat(r.exit()).as(r.err()).isZero();
        assertThat(r.out()).isEqualTo(Coop.migrationSql("billing_coop")).contains("billing_coop.run");
    }

    @Test
    void migrate_creates_and_then_keeps_a_schema() throws Exception {
        assertThat(tableExists("cli_fresh.run")).isFalse();
        Result first = coop("migrate", "--schema", "cli_fresh");
        assertThat(first.exit()).as(first.err()).isZero();
        assertThat(first.out()).startsWith("Schema 'cli_fresh' migrated from version 0 to ");
        assertThat(tableExists("cli_fresh.run")).isTrue();
        Result second = coop("migrate", "--schema", "cli_fresh", "--json");
        assertThat(second.out()).contains("\"schema\" : \"cli_fresh\"", "\"versionBefore\" : ");
        assertThat(coop("migrate", "--schema", "cli_fresh").out()).startsWith("Schema 'cli_fresh' is up to date");
        assertThat(coop("runs", "--schema", "cli_fresh").out()).startsWith("No runs match.");
        assertThat(coop("parked", "--schema", "cli_fresh").out()).startsWith("No parked runs.");
    }

    // ---- errors

    @Test
    void an_unknown_id_is_one_line_and_exit_code_1() {
        String unknown = UUID.randomUUID().toString();
        assertFailure(coop("tree", unknown), 1, "coop: No message " + unknown + " in schema 'coop'");
        assertFailure(coop("events", unknown), 1, "coop: No message " + unknown + " in schema 'coop'");
        assertFailure(coop("cancel", unknown, "--reason", "r"), 1, "coop: No message " + unknown);
        Result verbose = coop("tree", unknown, "--verbose");
        assertThat(verbose.exit()).isEqualTo(1);
        assertThat(verbose.err()).contains("CoopValidationException", "\tat ");
    }

    @Test
    void a_malformed_id_is_a_usage_error() {
        assertUsageError(coop("tree", "not-a-uuid"), "Not a message id (a UUID was expected): 'not-a-uuid'");
        assertUsageError(coop("events", "1234"), "Not a message id");
    }

    @Test
    void an_unreachable_server_is_one_line_and_exit_code_3() {
        Result r = coop("--url", "jdbc:postgresql://127.0.0.1:1/nothing", "tree", committed.toString());
        assertFailure(r, 3, "coop: Cannot connect to jdbc:postgresql://127.0.0.1:1/nothing: ");
        Result missingDb = coop("--url", db.jdbcUrl().replace(db.databaseName(), "no_such_database"), "runs");
        assertFailure(missingDb, 3, "coop: Cannot connect to ");
        assertThat(missingDb.err()).contains("no_such_database");
    }

    @Test
    void options_take_precedence_over_the_environment_and_may_follow_the_command() {
        Map<String, String> wrong = Map.of("COOP_JDBC_URL", "jdbc:postgresql://127.0.0.1:1/nothing");
        Result r = coopWith(wrong, "runs", "--saga", "cli-order-saga", "--url", db.jdbcUrl(), "--user",
                db.server().user(), "--password", db.server().password());
        assertThat(r.exit()).as(r.err()).isZero();
        assertThat(r.out()).contains(committed.toString());
        assertThat(coopWith(wrong, "runs").exit()).isEqualTo(3);
    }

    @Test
    void a_wrong_or_missing_url_is_a_usage_error() {
        assertUsageError(coop("--url", "http://localhost:5432/db", "runs"), "Not a PostgreSQL JDBC URL");
        assertUsageError(coopWith(Map.of(), "runs"), "No database: pass --url or set COOP_JDBC_URL");
    }

    @Test
    void a_database_without_the_schema_is_reported_and_not_migrated() throws Exception {
        Result r = coop("tree", committed.toString(), "--schema", "not_coop");
        assertFailure(r, 1, "coop: The database " + db.databaseName() + " has no Coop schema 'not_coop': create it"
                + " with 'coop migrate'");
        assertThat(coop("events", committed.toString(), "--schema", "not_coop").exit()).isEqualTo(1);
        for (String command : List.of("cancel", "rollback")) {
            assertThat(coop(command, committed.toString(), "--schema", "not_coop", "--reason", "r").exit())
                    .isEqualTo(1);
        }
        assertThat(coop("runs", "--schema", "not_coop").exit()).isEqualTo(1);
        assertThat(coop("parked", "--schema", "not_coop").exit()).isEqualTo(1);
        assertThat(tableExists("not_coop.run")).isFalse();
        assertUsageError(coop("runs", "--schema", "Not-A-Schema"), "Invalid schema name 'Not-A-Schema'");
    }

    @Test
    void a_missing_command_or_option_is_a_usage_error() {
        assertUsageError(coop(), "Missing command");
        assertUsageError(coop("tree"), "Give either a message id or --run <run-id>");
        assertUsageError(coop("frobnicate"), "Unmatched argument at index 0: 'frobnicate'");
    }

    @Test
    void help_and_version() {
        Result help = coop("--help");
        assertThat(help.exit()).isZero();
        assertThat(help.out()).contains("Usage: coop", "tree", "events", "runs", "cancel", "rollback", "migrate",
                "parked", "Exit codes:");
        assertThat(coop("tree", "--help").out()).contains("Usage: coop tree", "--frames", "--json", "--url");
    }

    private static void assertUsageError(Result r, String message) {
        assertFailure(r, 2, message);
    }

    private static void assertFailure(Result r, int exit, String message) {
        assertThat(r.exit()).as("exit code; stderr: " + r.err()).isEqualTo(exit);
        assertThat(r.err()).contains(message).startsWith("coop: ");
        assertThat(r.err().lines().toList()).as("one line: " + r.err()).hasSize(1);
        assertThat(r.out()).isEmpty();
    }

    private static boolean tableExists(String table) throws Exception {
        try (Connection c = db.dataSource().getConnection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT to_regclass('" + table + "') IS NOT NULL")) {
            rs.next();
            return rs.getBoolean(1);
        }
    }
}
