package dev.coop.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.CoopEngine;
import dev.coop.MessageId;
import dev.coop.Saga;
import dev.coop.Topic;
import dev.coop.inspect.MessageMatch;
import dev.coop.inspect.Outcome;
import dev.coop.inspect.RunQuery;
import dev.coop.test.CoopDatabase;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import picocli.CommandLine;

/** {@code coop launch <topic> <json>}: a saga tried from the shell. */
class LaunchCliTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    record Order(String order) {
    }

    @Test
    void a_message_is_launched_with_its_options_and_with_wait_its_tree_is_printed(DataSource dataSource)
            throws Exception {
        Topic<Order> topic = Topic.of("cli-launch", Order.class);
        Saga<Order> saga = Saga.on(topic, "cli-launch-saga")
                .step("take", step -> step.setResult(Map.of("took", step.payload().order())))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            CoopClient client = engine.client();
            String[] waited = run(0, "launch", "cli-launch", "{\"order\": \"o-17\"}", "--business-key",
                    "customer/1", "--tag", "vip", "--tag", "eu", "--wait", "--color=never");
            String printed = waited[0];
            MessageId id = MessageId.parse(printed.lines().findFirst().orElseThrow().strip());
            assertThat(printed).contains("cli-launch-saga", "take");
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.runs(RunQuery.newest().businessKey("customer/1"))).singleElement()
                    .satisfies(r -> assertThat(r.messageId()).isEqualTo(id));
            assertThat(client.search("eu")).extracting(MessageMatch::messageId).containsExactly(id);
            assertThat(client.resultJson(client.tree(id).runs().getFirst().runId())).contains("o-17");

            String first = run(0, "launch", "cli-launch", "{\"order\": \"o-18\"}", "--idempotency-key", "k-18")[0]
                    .strip();
            String again = run(0, "launch", "cli-launch", "{\"order\": \"o-18\"}", "--idempotency-key", "k-18")[0]
                    .strip();
            assertThat(again).as("the same key: the first message").isEqualTo(first);

            JsonNode delayed = new ObjectMapper().readTree(run(0, "launch", "cli-launch", "{\"order\": \"later\"}",
                    "--delay", "1h", "--json")[0]);
            MessageId later = MessageId.parse(delayed.get("messageId").asText());
            assertThat(client.statuses(later)).as("due in an hour: not run yet")
                    .noneMatch(s -> s == dev.coop.RunStatus.COMMITTED);
            Instant at = Instant.parse("2099-01-01T00:00:00Z");
            String scheduled = run(0, "launch", "cli-launch", "{}", "--at", at.toString())[0].strip();
            assertThat(MessageId.parse(scheduled)).isNotNull();

            assertThat(run(0, "runs", "--topic", "cli-launch", "--summary", "--limit", "1")[0])
                    .as("--summary counts every run, not the first --limit").startsWith("4 runs: ");
            assertThat(run(CoopCli.EXIT_USAGE, "launch", "cli-launch", "{not json")[1]).contains("not JSON");
            assertThat(run(CoopCli.EXIT_USAGE, "launch", "cli-launch", "{}", "--at", "tomorrow")[1])
                    .contains("--at");
            assertThat(run(CoopCli.EXIT_FAILURE, "launch", "cli-launch", "{}", "--business-key", " ")[1])
                    .contains("business key");
            assertThat(run(0, "launch", "--help")[0]).contains("--business-key", "--idempotency-key", "--tag",
                    "--at", "--delay", "--wait");
        }
    }

    /** Output and error of {@code coop args}, which must exit with {@code code}. */
    static String[] run(int code, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine commandLine = CoopCli.commandLine(Map.of("COOP_JDBC_URL", db.jdbcUrl(), "COOP_JDBC_USER",
                db.server().user(), "COOP_JDBC_PASSWORD", db.server().password()));
        commandLine.setOut(new PrintWriter(out, true));
        commandLine.setErr(new PrintWriter(err, true));
        assertThat(commandLine.execute(args)).as("exit code of coop %s: %s", String.join(" ", args), err)
                .isEqualTo(code);
        return new String[]{out.toString(), err.toString()};
    }
}
