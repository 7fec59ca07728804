package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.inspect.Outcome;
import dev.coop.inspect.RunView;
import dev.coop.inspect.RunningStep;
import dev.coop.render.JsonRenderer;
import dev.coop.render.RenderOptions;
import dev.coop.render.TextRenderer;
import dev.coop.test.CoopDatabase;
import java.io.IOException;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Inspection shows the step an engine executes right now, read from what its claim leaves (no write). */
class RunningStepTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);

    @Test
    void a_step_in_flight_shows_with_its_engine_attempt_and_start_and_is_gone_once_it_committed(
            DataSource dataSource) throws Exception {
        Topic<Empty> topic = Topic.of("running-step", Empty.class);
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicReference<String> applicationName = new AtomicReference<>();
        Saga<Empty> saga = Saga.on(topic, "running-saga")
                .step("quick", step -> {
                })
                .step("invoice", step -> {
                    if (step.attempt() == 1) {
                        throw new IOException("the ERP is down");
                    }
                    try (Statement s = step.connection().createStatement();
                            ResultSet rs = s.executeQuery("SELECT current_setting('application_name')")) {
                        rs.next();
                        applicationName.set(rs.getString(1));
                    }
                    inside.countDown();
                    release.await(WAIT.toMillis(), TimeUnit.MILLISECONDS);
                })
                .retry(RetryPolicy.attempts(3).initialDelay(Duration.ZERO))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(inside.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();

            RunView run = engine.client().tree(id).runs().getFirst();
            RunningStep running = run.running();
            assertThat(run.status()).isEqualTo(RunStatus.RUNNABLE);
            assertThat(running).isNotNull();
            assertThat(running.step()).isEqualTo("invoice");
            assertThat(running.engine()).isEqualTo(engine.id());
            assertThat(running.attempt()).isEqualTo(2);
            assertThat(running.since()).isNotNull().isAfterOrEqualTo(run.steps().getFirst().endedAt());
            assertThat(running.lastActivity()).isNotNull().isAfterOrEqualTo(running.since());
            assertThat(applicationName.get()).isEqualTo("coop " + engine.id());
            assertThat(engine.client().tree(run.lineage()).running()).isEqualTo(running);

            String text = new TextRenderer(RenderOptions.defaults()).render(engine.client().tree(id));
            assertThat(text).contains("RUNNING").contains("▶ invoice  running  " + engine.id() + "  since ")
                    .contains("attempt 2");
            JsonRenderer json = new JsonRenderer(false);
            String rendered = json.render(run);
            assertThat(rendered).contains("\"running\":{\"step\":\"invoice\"");
            assertThat(json.readRun(rendered)).isEqualTo(run);

            release.countDown();
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(engine.client().tree(id).runs().getFirst().running()).isNull();
        }
    }

    @Test
    void a_runs_first_step_in_flight_is_named_too(DataSource dataSource) throws Exception {
        Topic<Empty> topic = Topic.of("running-first", Empty.class);
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        Saga<Empty> saga = Saga.on(topic, "running-first-saga").step("first-and-slow", step -> {
            inside.countDown();
            release.await(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        }).build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(inside.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
            assertThat(engine.client().tree(id).runs().getFirst().running().step()).isEqualTo("first-and-slow");
            release.countDown();
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
        }
    }

    @Test
    void a_runnable_run_no_engine_executes_shows_no_running_step(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("running-none", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "running-none-saga").step("only", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            engine.close(); // registered, then stopped: the run is created and waits
            MessageId id = Coop.client(dataSource).launch(topic, new Empty());
            RunView run = Coop.client(dataSource).tree(id).runs().getFirst();
            assertThat(run.status()).isEqualTo(RunStatus.RUNNABLE);
            assertThat(run.running()).isNull();
            assertThat(new TextRenderer(RenderOptions.defaults()).render(run)).contains("RUNNABLE")
                    .doesNotContain("RUNNING").doesNotContain("  running  ");
        }
    }
}
