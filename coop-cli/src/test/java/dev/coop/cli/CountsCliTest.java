package dev.coop.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Coop;
import dev.coop.CoopEngine;
import dev.coop.MessageId;
import dev.coop.Saga;
import dev.coop.Topic;
import dev.coop.inspect.Outcome;
import dev.coop.test.CoopDatabase;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import picocli.CommandLine;

/** {@code coop counts}: runs launched and finished per saga over the last hours. */
class CountsCliTest {
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
}
