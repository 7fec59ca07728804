package dev.coop.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.CoopEngine;
import dev.coop.LaunchOptions;
import dev.coop.MessageId;
import dev.coop.Saga;
import dev.coop.TaskOptions;
import dev.coop.TaskState;
import dev.coop.Topic;
import dev.coop.inspect.Outcome;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import picocli.CommandLine;

/** {@code coop tasks}, {@code coop complete}, {@code coop fail} and {@code coop runs --key/--tag}. */
class TaskCliTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    record Request(String id) {
    }

    @Test
    void an_operator_lists_completes_and_fails_external_tasks(DataSource dataSource) {
        Topic<Request> topic = Topic.of("cli-tasks", Request.class);
        Saga<Request> saga = Saga.on(topic, "cli-tasks-saga")
                .step("ask", step -> step.openTask("approval", step.payload(),
                        TaskOptions.none().key("approval/" + step.payload().id())))
                .step("use", step -> step.setResult(step.taskResult("approval", String.class)))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            CoopClient client = engine.client();
            MessageId ok = client.launch(topic, new Request("1"), LaunchOptions.none().businessKey("order/1")
                    .tags("vip"));
            MessageId no = client.launch(topic, new Request("2"));
            Await.until("both open", WAIT, () -> client.openTasks(10).size() == 2);

            String list = coop("tasks");
            assertThat(list).contains("approval/1", "approval/2", "OPEN", "ct_");
            assertThat(coop("tasks", "approval/1", "--json")).contains("\"state\" : \"OPEN\"",
                    "\"name\" : \"approval\"");
            assertThat(coop("complete", "approval/1", "--result", "\"yes\"", "--actor", "ops:ada"))
                    .contains("completed");
            assertThat(coop("complete", "approval/1", "--result", "\"yes\"")).contains("already");
            assertThat(exit("complete", "approval/1", "--result", "\"no\"")).isEqualTo(CoopCli.EXIT_FAILURE);
            assertThat(exit("complete", "approval/1", "--result", "{not json")).isEqualTo(CoopCli.EXIT_USAGE);
            assertThat(coop("fail", "approval/2", "--reason", "rejected")).contains("failed");
            assertThat(client.awaitCompletion(ok, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.awaitCompletion(no, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(client.externalTask("approval/1").orElseThrow().settledBy()).contains("ops:ada");
            assertThat(client.externalTask("approval/2").orElseThrow().state()).isEqualTo(TaskState.FAILED);
            assertThat(coop("tasks")).contains("No open external tasks.");

            assertThat(coop("runs", "--key", "order/1", "--color=never")).contains("cli-tasks-saga")
                    .contains(ok.toString().substring(0, 8));
            assertThat(coop("runs", "--tag", "vip", "--json")).contains(ok.toString())
                    .doesNotContain(no.toString());
        }
    }

    static String coop(String... args) {
        StringWriter out = new StringWriter();
        CommandLine commandLine = commandLine(out);
        assertThat(commandLine.execute(args)).as("exit code of coop %s", String.join(" ", args)).isZero();
        return out.toString();
    }

    static int exit(String... args) {
        return commandLine(new StringWriter()).execute(args);
    }

    private static CommandLine commandLine(StringWriter out) {
        CommandLine commandLine = CoopCli.commandLine(Map.of("COOP_JDBC_URL", db.jdbcUrl(), "COOP_JDBC_USER",
                db.server().user(), "COOP_JDBC_PASSWORD", db.server().password()));
        commandLine.setOut(new PrintWriter(out, true));
        commandLine.setErr(new PrintWriter(new StringWriter(), true));
        return commandLine;
    }
}
