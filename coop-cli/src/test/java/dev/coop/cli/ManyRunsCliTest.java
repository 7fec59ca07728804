package dev.coop.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Coop;
import dev.coop.CoopEngine;
import dev.coop.MessageId;
import dev.coop.RetryPolicy;
import dev.coop.RunStatus;
import dev.coop.Saga;
import dev.coop.Topic;
import dev.coop.inspect.Outcome;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import picocli.CommandLine;

/**
 * Many runs at once: {@code coop counts} (runs launched and finished per saga over the last hours), and {@code coop
 * cancel} / {@code coop rollback} of a selection.
 */
class ManyRunsCliTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    record Item(boolean fail) {
    }

    record Result(int exit, String out, String err) {
    }

    static Result coop(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine commandLine = CoopCli.commandLine(Map.of("COOP_JDBC_URL", db.jdbcUrl(), "COOP_JDBC_USER",
                db.server().user(), "COOP_JDBC_PASSWORD", db.server().password()));
        commandLine.setOut(new PrintWriter(out, true));
        commandLine.setErr(new PrintWriter(err, true));
        return new Result(commandLine.execute(args), out.toString(), err.toString());
    }

    @Test
    void counts_sums_up_each_saga_over_the_window_and_lists_minutes_on_request() {
        Topic<Item> topic = Topic.of("cli-counted", Item.class);
        Saga<Item> saga = Saga.on(topic, "cli-counted-saga").step("check", step -> {
            if (step.payload().fail()) {
                throw new IllegalStateException("no");
            }
        }).build();
        try (CoopEngine engine = Coop.engine(db.dataSource()).register(saga).start()) {
            MessageId a = engine.client().launch(topic, new Item(false));
            MessageId b = engine.client().launch(topic, new Item(true));
            assertThat(engine.client().awaitCompletion(a, Duration.ofSeconds(20))).isEqualTo(Outcome.COMMITTED);
            assertThat(engine.client().awaitCompletion(b, Duration.ofSeconds(20))).isEqualTo(Outcome.ROLLED_BACK);
        }
        Result r = coop("counts", "--last", "2h");
        assertThat(r.exit()).as(r.err()).isZero();
        assertThat(r.out()).startsWith("SAGA").containsPattern("cli-counted-saga\\s+2\\s+1\\s+1\\s+0\\s+0")
                .contains("last 2h");
        Result minutes = coop("counts", "--last", "30m", "--per-minute", "--saga", "cli-counted-saga");
        assertThat(minutes.out()).startsWith("MINUTE (UTC)").contains("cli-counted-saga");
        Result json = coop("--json", "counts");
        assertThat(json.out()).contains("\"saga\" : \"cli-counted-saga\"").contains("\"rolledBack\" : 1");

        Result tooFar = coop("counts", "--last", "30d");
        assertThat(tooFar.exit()).isEqualTo(CoopCli.EXIT_USAGE);
        assertThat(tooFar.err()).contains("--last: window must be between 1 minute and 7 days");
        assertThat(coop("counts", "--saga", "nobody").out()).startsWith("No runs launched or finished in the last 1h");
    }

    @Test
    void a_selection_is_counted_by_a_dry_run_then_cancelled_or_rolled_back_with_a_reason() {
        Topic<Item> parking = Topic.of("cli-select-parking", Item.class);
        Saga<Item> parks = Saga.on(parking, "cli-select-parking").step("call", step -> {
            throw new java.io.IOException("down");
        }).retry(RetryPolicy.attempts(1).parkWhenExhausted()).build();
        Topic<Item> booking = Topic.of("cli-select-booking", Item.class);
        Saga<Item> books = Saga.on(booking, "cli-select-booking").step("book", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(db.dataSource()).register(parks, books).start()) {
            var client = engine.client();
            MessageId parked = client.launch(parking, new Item(false));
            MessageId booked = client.launch(booking, new Item(false));
            Await.until("a parked run", Duration.ofSeconds(20), () -> client.countParked("cli-select-parking") == 1);
            assertThat(client.awaitCompletion(booked, Duration.ofSeconds(20))).isEqualTo(Outcome.COMMITTED);

            Result dry = coop("cancel", "--saga", "cli-select-parking", "--status", "parked", "--failure-type",
                    "IOException", "--dry-run");
            assertThat(dry.exit()).as(dry.err()).isZero();
            assertThat(dry.out()).startsWith("At most 1 run would be cancelled").contains("1 parked", "dry run");
            assertThat(client.statuses(parked)).containsExactly(RunStatus.PARKED);
            Result noReason = coop("cancel", "--saga", "cli-select-parking");
            assertThat(noReason.exit()).isEqualTo(CoopCli.EXIT_USAGE);
            assertThat(noReason.err()).contains("Say why with --reason");
            Result both = coop("cancel", parked.toString(), "--saga", "cli-select-parking", "--reason", "x");
            assertThat(both.exit()).isEqualTo(CoopCli.EXIT_USAGE);
            assertThat(both.err()).contains("Give either a message id, or a selection");

            Result cancel = coop("cancel", "--saga", "cli-select-parking", "--status", "PARKED", "--reason",
                    "withdrawn", "--actor", "ops");
            assertThat(cancel.exit()).as(cancel.err()).isZero();
            assertThat(cancel.out()).startsWith("Cancellation requested for 1 run").contains("audited as ops");
            assertThat(client.awaitCompletion(parked, Duration.ofSeconds(20))).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(client.audit(parked)).singleElement()
                    .satisfies(a -> assertThat(a.action()).isEqualTo("cancel-selection"));

            Result rollback = coop("rollback", "--saga", "cli-select-booking", "--since", "1h", "--reason",
                    "booked by mistake");
            assertThat(rollback.exit()).as(rollback.err()).isZero();
            assertThat(rollback.out()).startsWith("Rollback requested for 1 run");
            assertThat(client.awaitCompletion(booked, Duration.ofSeconds(20))).isEqualTo(Outcome.ROLLED_BACK);
        }
    }
}
