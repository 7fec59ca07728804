package dev.coop.docs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.CoopEngine;
import dev.coop.MessageId;
import dev.coop.RunStatus;
import dev.coop.Saga;
import dev.coop.Topic;
import dev.coop.inspect.Event;
import dev.coop.inspect.Hierarchy;
import dev.coop.inspect.Outcome;
import dev.coop.inspect.RunCount;
import dev.coop.inspect.RunQuery;
import dev.coop.inspect.RunSummary;
import dev.coop.join.JoinId;
import dev.coop.join.JoinResult;
import dev.coop.join.JoinSpec;
import dev.coop.join.JoinStatus;
import dev.coop.join.JoinView;
import dev.coop.join.Joins;
import dev.coop.render.Renderers;
import dev.coop.render.TextRenderer;
import dev.coop.schedule.Schedule;
import dev.coop.schedule.ScheduleSummary;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import dev.coop.test.CoopTables;
import dev.coop.test.TestClock;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The guide's and docs' samples of schedules, inspection and joins, each run. */
class ClientSamplesTest {
    /** A database per test: the samples reuse topic names, and a saga registered once stays registered. */
    @RegisterExtension
    final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    record Reminders() {
    }

    record Report(String name) {
    }

    record Ping() {
    }

    record TrialEnded(String account) {
    }

    record Extract(String customerId) {
    }

    record ExtractRequest(String customerId) {
    }

    static final Topic<Reminders> REMINDERS = Topic.of("reminders", Reminders.class);
    static final Topic<Report> REPORT = Topic.of("report", Report.class);
    static final Topic<Ping> PING = Topic.of("ping", Ping.class);
    static final Topic<TrialEnded> TRIAL_ENDED = Topic.of("trial-ended", TrialEnded.class);
    static final Topic<ExtractRequest> EXTRACT_CUSTOMERS = Topic.of("extract-customers", ExtractRequest.class);
    static final Topic<ExtractRequest> EXTRACT_ORDERS = Topic.of("extract-orders", ExtractRequest.class);

    static <P> Saga<P> noop(Topic<P> topic) {
        return Saga.on(topic, topic.name() + "-handler").step("handle", step -> {
        }).build();
    }

    @Test
    void schedules_fire_at_their_times(DataSource dataSource) throws Exception {
        TestClock clock = new TestClock(Instant.parse("2027-03-01T07:30:00Z")); // a Monday
        try (CoopEngine engine = Coop.engine(dataSource).clock(clock)
                .register(noop(REMINDERS), noop(REPORT), noop(PING), noop(TRIAL_ENDED)).start()) {
            TrialEnded payload = new TrialEnded("acc-1");
            Schedule schedule = Schedule.every(Duration.ofDays(30));
            // tag::schedules[]
            CoopClient client = engine.client();
            client.schedule("reminders", REMINDERS, new Reminders(), Schedule.every(Duration.ofMinutes(15)));
            client.schedule("daily-report", REPORT, new Report("sales"),
                    Schedule.cron("0 9 * * MON-FRI").inZone("Europe/Paris")); // 09:00 Paris time on weekdays
            client.schedule("heartbeat", PING, new Ping(), Schedule.cron("0/10 * * * * *")); // 6 fields: seconds first
            try (Connection connection = dataSource.getConnection()) {
                client.schedule(connection, "trial-end", TRIAL_ENDED, payload, schedule); // in your own transaction
            }
            List<ScheduleSummary> all = client.schedules(); // name, topic, next due, last message, skipped, paused
            client.unschedule("reminders"); // messages it launched already go on
            // end::schedules[]
            assertThat(all).hasSize(4);
            clock.advance(Duration.ofHours(1)); // 09:00 in Paris is 08:00 UTC in March: the report is due
            MessageId report = Await.value("the daily report", WAIT, () -> client.schedules().stream()
                    .filter(s -> s.name().equals("daily-report")).findFirst().orElseThrow().lastMessage());
            assertThat(client.awaitCompletion(report, WAIT)).isEqualTo(Outcome.COMMITTED);
        }
    }

    @Test
    void trees_logs_and_listings(DataSource dataSource) {
        Saga<Report> billing = Saga.on(REPORT, "billing").step("bill", step -> {
            throw new IllegalStateException("No billing account");
        }).build();
        try (CoopEngine engine = Coop.engine(dataSource).register(billing).start()) {
            CoopClient client = engine.client();
            MessageId messageId = client.launch(REPORT, new Report("monthly"));
            assertThat(client.awaitCompletion(messageId, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            // tag::inspection[]
            Hierarchy tree = client.tree(messageId); // every run, its steps (start, end, engine, what each launched),
                                                     // failures with their cause chains, and the runs they caused
            System.out.println(Renderers.forTerminal().render(tree)); // a readable tree; Renderers.json() for JSON
            List<Event> log = client.events(messageId); // the raw event log of the hierarchy, in order (at most 10,000)
            List<RunSummary> failed = client.runs(
                    RunQuery.newest().status(RunStatus.ROLLED_BACK).saga("billing").limit(20));
            // end::inspection[]
            assertThat(log).isNotEmpty();
            assertThat(failed).extracting(RunSummary::messageId).containsExactly(messageId);

            // tag::renderers[]
            TextRenderer text = Renderers.forTerminal(); // colours on a terminal, unless NO_COLOR / TERM=dumb
            System.out.print(text.render(client.tree(messageId)));
            String json = Renderers.json().render(client.tree(messageId));
            Hierarchy back = Renderers.json().readHierarchy(json); // equal to the original
            // end::renderers[]
            assertThat(back).isEqualTo(client.tree(messageId));
        }
    }

    @Test
    void many_runs_at_once(DataSource dataSource) {
        Saga<Report> billing = Saga.on(REPORT, "billing").step("bill", step -> {
            throw new java.io.IOException("The ERP does not answer");
        }).retry(dev.coop.RetryPolicy.attempts(1).parkWhenExhausted()).build();
        try (CoopEngine engine = Coop.engine(dataSource).register(billing).start()) {
            CoopClient client = engine.client();
            MessageId messageId = client.launch(REPORT, new Report("quarterly"));
            Await.until("parked", WAIT, () -> client.countParked("billing") == 1);
            // tag::many-runs[]
            RunQuery stuck = RunQuery.newest().saga("billing").status(RunStatus.PARKED).failureType("IOException");
            long counted = client.countRuns(stuck).getOrDefault(RunStatus.PARKED, 0L); // the dry run
            long cancelled = client.cancel(stuck, "olga", "the ERP was retired");
            for (RunCount minute : client.counts(Duration.ofHours(2))) {
                System.out.println(minute.minute() + " " + minute.saga() + ": " + minute.launched() + " launched, "
                        + minute.committed() + " committed");
            }
            // end::many-runs[]
            assertThat(counted).isEqualTo(1);
            assertThat(cancelled).isEqualTo(1);
            assertThat(client.awaitCompletion(messageId, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
        }
    }

    @Test
    void a_join_waits_for_its_members(DataSource dataSource) throws Exception {
        Topic<JoinResult> done = Topic.of("extracted", JoinResult.class);
        Topic<JoinResult> failed = Topic.of("extract-failed", JoinResult.class);
        TestClock clock = new TestClock();
        try (CoopEngine engine = Coop.engine(dataSource).clock(clock).register(noop(EXTRACT_CUSTOMERS),
                noop(EXTRACT_ORDERS), noop(done), noop(failed)).start()) {
            CoopClient client = engine.client();
            ExtractRequest request = new ExtractRequest("42");
            // tag::joins[]
            Topic<JoinResult> EXTRACTED = Topic.of("extracted", JoinResult.class); // a saga on each handles the end
            Topic<JoinResult> EXTRACT_FAILED = Topic.of("extract-failed", JoinResult.class);

            Joins joins = client.joins();
            JoinId join;
            try (Connection c = dataSource.getConnection()) { // or without c: each call in its own transaction
                c.setAutoCommit(false);
                join = joins.start(c, JoinSpec.expecting(2).key("customer-42").metadata(new Extract("42"))
                        .onComplete(EXTRACTED).onFail(EXTRACT_FAILED).failIfAnyFailed()
                        .timeout(Duration.ofMinutes(30)));
                joins.attach(c, join, client.launch(c, EXTRACT_CUSTOMERS, request));
                joins.attach(c, join, client.launch(c, EXTRACT_ORDERS, request));
                c.commit(); // all of it, or nothing
            }
            JoinView view = joins.get(join); // status, counters, members
            // end::joins[]
            assertThat(view.expected()).isEqualTo(2);
            Await.until("the join completed", WAIT, () -> joins.get(join).status() == JoinStatus.COMPLETED);

            JoinId late = joins.start(JoinSpec.expecting(1).onComplete(EXTRACTED).onFail(EXTRACT_FAILED)
                    .timeout(Duration.ofMinutes(30)));
            CoopTables tables = CoopTables.of(dataSource);
            Await.until("nothing due", WAIT, () -> tables.idleAt(clock.now()));
            clock.advance(Duration.ofMinutes(30));
            Await.until("the join timed out", WAIT, () -> joins.get(late).status() == JoinStatus.TIMED_OUT);
        }
    }
}
