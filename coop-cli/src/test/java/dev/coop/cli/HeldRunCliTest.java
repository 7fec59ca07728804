package dev.coop.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.CoopEngine;
import dev.coop.LaunchOptions;
import dev.coop.MessageId;
import dev.coop.Saga;
import dev.coop.Topic;
import dev.coop.inspect.Outcome;
import dev.coop.test.CoopDatabase;
import dev.coop.test.StepGate;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import picocli.CommandLine;

/** {@code coop tree} and {@code coop runs} say why a run is not running: held behind its ordering key. */
class HeldRunCliTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    record Transfer(String account) {
    }

    @Test
    void a_held_run_is_shown_behind_the_run_ahead_with_its_key_and_priority(DataSource dataSource) throws Exception {
        Topic<Transfer> topic = Topic.of("cli-held", Transfer.class);
        StepGate gate = new StepGate(WAIT);
        Saga<Transfer> saga = Saga.on(topic, "cli-held-saga").step("book", step -> gate.pass()).build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            CoopClient client = engine.client();
            MessageId first = client.launch(topic, new Transfer("acct-1"), LaunchOptions.none()
                    .orderingKey("acct-1"));
            gate.awaitArrivals(1, WAIT);
            MessageId second = client.launch(topic, new Transfer("acct-1"), LaunchOptions.none()
                    .orderingKey("acct-1").priority(-2));
            String ahead = client.tree(first).runs().get(0).runId().toString();

            String tree = coop("tree", second.toString(), "--color=never");
            assertThat(tree).contains("HELD (held behind key 'acct-1': run " + ahead + " ahead)")
                    .contains("priority -2");
            assertThat(coop("tree", second.toString(), "--json")).contains("\"heldBehind\"", ahead);
            assertThat(coop("runs", "--status", "HELD", "--color=never")).contains("HELD", "cli-held-saga");
            gate.open();
            assertThat(client.awaitCompletion(second, WAIT)).isEqualTo(Outcome.COMMITTED);
        } finally {
            gate.open();
        }
    }

    static String coop(String... args) {
        StringWriter out = new StringWriter();
        CommandLine commandLine = CoopCli.commandLine(Map.of("COOP_JDBC_URL", db.jdbcUrl(), "COOP_JDBC_USER",
                db.server().user(), "COOP_JDBC_PASSWORD", db.server().password()));
        commandLine.setOut(new PrintWriter(out, true));
        commandLine.setErr(new PrintWriter(new StringWriter(), true));
        assertThat(commandLine.execute(args)).as("exit code of coop %s", String.join(" ", args)).isZero();
        return out.toString();
    }
}
