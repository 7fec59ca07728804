package dev.coop.docs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.CoopEngine;
import dev.coop.CooperationContext;
import dev.coop.Deadline;
import dev.coop.Deadlines;
import dev.coop.MessageId;
import dev.coop.RetryPolicy;
import dev.coop.Saga;
import dev.coop.Topic;
import dev.coop.inspect.Outcome;
import dev.coop.join.JoinId;
import dev.coop.join.JoinResult;
import dev.coop.join.JoinSpec;
import dev.coop.join.JoinStatus;
import dev.coop.render.Renderers;
import dev.coop.schedule.Schedule;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import dev.coop.test.CoopTables;
import dev.coop.test.TestClock;
import java.io.IOException;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The "Time in tests" sample of docs/guide/testing.md: a day of saga time (a 24-hour sleep, a missed 1-hour deadline, a retry after
 * 10 minutes, a cron schedule for tomorrow, a join that times out after an hour) passes in milliseconds, through the
 * same statements as in production, because the engine reads the time from a {@link TestClock}. How long it took is
 * printed, not asserted.
 */
class TimeTravelTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    record Renewal(String customer) {
    }

    record Transfer(String account) {
    }

    record Report(String name) {
    }

    static final Topic<Renewal> RENEWAL = Topic.of("renewal", Renewal.class);
    static final Topic<Transfer> TRANSFER = Topic.of("transfer", Transfer.class);
    static final Topic<Report> REPORT = Topic.of("nightly-report", Report.class);
    static final Topic<JoinResult> EXPORTED = Topic.of("exported", JoinResult.class);
    static final Topic<JoinResult> EXPORT_LATE = Topic.of("export-late", JoinResult.class);

    @Test
    void a_day_of_saga_time_passes_in_milliseconds(DataSource dataSource) {
        long began = System.nanoTime();
        // tag::test-clock[]
        TestClock clock = new TestClock(); // time stands still until the test advances it
        Saga<Renewal> renewal = Saga.on(RENEWAL, "renewal")
                .step("remind", step -> {
                })
                .sleep("cool-off", Duration.ofHours(24))
                .step("renew", step -> {
                })
                .build();
        Saga<Transfer> transfer = Saga.on(TRANSFER, "transfer")
                .step("call-bank", step -> {
                    if (step.attempt() == 1) {
                        throw new IOException("bank unavailable");
                    }
                })
                .retry(RetryPolicy.attempts(2).initialDelay(Duration.ofMinutes(10)).retryOn(IOException.class))
                .build();
        Saga<Report> report = Saga.on(REPORT, "report").step("write", step -> {
        }).build();
        CoopTables tables = CoopTables.of(dataSource);
        try (CoopEngine engine = Coop.engine(dataSource).clock(clock).register(renewal, transfer, report).start()) {
            CoopClient client = engine.client(); // uses the engine's clock
            MessageId sleeper = client.launch(RENEWAL, new Renewal("ada"));
            MessageId late = client.launch(RENEWAL, new Renewal("bob"), CooperationContext.of(Deadlines.HAPPY_PATH,
                    Deadline.at(clock.instant().plus(Duration.ofHours(1)), "renewal desk")));
            MessageId retried = client.launch(TRANSFER, new Transfer("acc-1"));
            client.schedule("nightly", REPORT, new Report("sales"), Schedule.cron("0 3 * * *")); // 03:00 UTC
            JoinId export = client.joins().start(JoinSpec.expecting(1).onComplete(EXPORTED).onFail(EXPORT_LATE)
                    .timeout(Duration.ofHours(1)));

            Await.until("everything waits", WAIT, () -> tables.idleAt(clock.now()));
            clock.advance(Duration.ofHours(1)); // the deadline passes, the join times out
            assertThat(client.awaitCompletion(late, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(Renderers.text().render(client.tree(late))).contains("DeadlineMissedException");
            Await.until("the join timed out", WAIT,
                    () -> client.joins().get(export).status() == JoinStatus.TIMED_OUT);

            clock.advance(Duration.ofMinutes(10)); // the bank is called again
            assertThat(client.awaitCompletion(retried, WAIT)).isEqualTo(Outcome.COMMITTED);

            clock.advance(Duration.ofHours(23)); // a day after the launch
            assertThat(client.awaitCompletion(sleeper, WAIT)).isEqualTo(Outcome.COMMITTED);
            MessageId nightly = Await.value("the nightly report", WAIT,
                    () -> client.schedules().getFirst().lastMessage());
            assertThat(client.awaitCompletion(nightly, WAIT)).isEqualTo(Outcome.COMMITTED);
        }
        // end::test-clock[]
        System.out.printf("A 24-hour sleep, a missed 1-hour deadline, a 10-minute retry backoff, a cron schedule"
                + " for tomorrow and a join timeout took %d ms of wall-clock time (engine start included)%n",
                Duration.ofNanos(System.nanoTime() - began).toMillis());
    }
}
