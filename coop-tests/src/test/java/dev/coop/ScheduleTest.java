package dev.coop;

import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.Event;
import dev.coop.inspect.Outcome;
import dev.coop.schedule.Schedule;
import dev.coop.schedule.ScheduleSummary;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import dev.coop.test.CoopTables;
import dev.coop.test.EventLog;
import dev.coop.test.Invariants;
import dev.coop.test.StepGate;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Periodic execution: fixed periods and cron expressions fire on the database's clock, without overlapping a period
 * that still runs, once per period across engines, and across restarts; the next due time is computed, not polled.
 */
class ScheduleTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);
    static final Duration SECOND = Duration.ofSeconds(1);
    /** Long enough that only a computed due time, never the poll, can explain a timely firing. */
    static final Duration LONG_POLL = Duration.ofSeconds(30);

    record Tick(String label) {
    }

    /** A message a schedule launched, as stored: when (the database's clock), what, and which engine fired it. */
    record Fire(UUID id, Instant at, String payload, String engine) {
    }

    @AfterEach
    void removeSchedules(DataSource dataSource) {
        CoopClient client = Coop.client(dataSource);
        client.schedules().forEach(s -> client.unschedule(s.name()));
    }

    @Test
    void a_fixed_period_fires_once_per_period_on_time_without_polling(DataSource dataSource) {
        Topic<Tick> topic = Topic.of("period-ticks", Tick.class);
        Saga<Tick> saga = Saga.on(topic, "period-counter").step("count", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(dataSource).pollInterval(LONG_POLL).register(saga).start()) {
            ScheduleSummary created = engine.client().schedule("every-second", topic, new Tick("p"),
                    Schedule.every(SECOND));
            assertThat(created.schedule()).isEqualTo(Schedule.every(SECOND));
            assertThat(created.nextDue()).isEqualTo(created.createdAt().plus(SECOND));
            List<Fire> fires = Await.value("three periods fired", WAIT, () -> {
                List<Fire> f = fires(dataSource, topic);
                return f.size() >= 3 ? f : null;
            });
            Instant firstDue = created.nextDue().toInstant();
            for (int k = 0; k < 3; k++) {
                Duration late = Duration.between(firstDue.plus(SECOND.multipliedBy(k)), fires.get(k).at());
                // well under the 30 s poll interval: the timer woke the engine (lateness is measured by the
                // benchmark, not asserted here: a loaded CI machine may stall a few hundred ms)
                assertThat(late).as("lateness of period %d", k).isGreaterThanOrEqualTo(Duration.ZERO)
                        .isLessThan(SECOND);
                assertThat(fires.get(k).engine()).isEqualTo(engine.id());
            }
            Await.until("the messages to commit", WAIT,
                    () -> fires.stream().limit(3).allMatch(f -> engine.client().statuses(new MessageId(f.id()))
                            .equals(List.of(RunStatus.COMMITTED))));
            List<Event> log = engine.client().events(new MessageId(fires.getFirst().id()));
            assertThat(EventLog.rows(log)).containsExactly("EMITTED - -", "SEEN period-counter -",
                    "SUSPENDED period-counter count", "COMMITTED period-counter count");
            assertThat(log.getFirst().engine()).isEqualTo(engine.id());
            assertThat(engine.client().tree(new MessageId(fires.getFirst().id())).runs()).hasSize(1);
            ScheduleSummary now = summary(engine.client(), "every-second");
            assertThat(now.lastMessage()).isNotNull();
            assertThat(now.nextDue()).isAfter(now.lastFiredAt());
            assertThat(now.skipped()).isZero();
        }
    }

    @Test
    void a_cron_expression_with_seconds_fires_at_its_times(DataSource dataSource) {
        Topic<Tick> topic = Topic.of("cron-ticks", Tick.class);
        Saga<Tick> saga = Saga.on(topic, "cron-counter").step("count", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(dataSource).pollInterval(LONG_POLL).register(saga).start()) {
            ScheduleSummary created = engine.client().schedule("every-other-second", topic, new Tick("c"),
                    Schedule.cron("0/2 * * * * ?"));
            assertThat(created.nextDue().getSecond() % 2).isZero();
            assertThat(created.nextDue().getNano()).isZero();
            List<Fire> fires = Await.value("three cron times fired", WAIT, () -> {
                List<Fire> f = fires(dataSource, topic);
                return f.size() >= 3 ? f : null;
            });
            for (int k = 0; k < 3; k++) {
                Instant due = created.nextDue().toInstant().plusSeconds(2L * k);
                assertThat(Duration.between(due, fires.get(k).at())).as("lateness of time %d", k)
                        .isGreaterThanOrEqualTo(Duration.ZERO)
                        .isLessThan(SECOND);
            }
        }
    }

    @Test
    void cron_and_period_times_are_computed_from_a_given_clock() {
        // a Friday; Paris is UTC+2 until the last Sunday of October
        Instant friday = Instant.parse("2026-10-16T10:00:00.500Z");
        Schedule weekdays = Schedule.cron("0 9 * * MON-FRI").inZone("Europe/Paris");
        assertThat(weekdays.firstTime(friday)).isEqualTo(Instant.parse("2026-10-19T07:00:00Z"));
        Instant monday = weekdays.firstTime(friday);
        assertThat(weekdays.nextTime(monday, monday)).isEqualTo(Instant.parse("2026-10-20T07:00:00Z"));
        // after the clocks went back (26 October): 09:00 Paris is 08:00 UTC
        assertThat(weekdays.firstTime(Instant.parse("2026-10-23T08:00:00Z")))
                .isEqualTo(Instant.parse("2026-10-26T08:00:00Z"));
        // a late firing (the engines were down for three days) is followed by the next time after now, not a burst
        Instant late = Instant.parse("2026-10-22T12:00:00Z");
        assertThat(weekdays.missedSome(monday, late)).isTrue();
        assertThat(weekdays.nextTime(monday, late)).isEqualTo(Instant.parse("2026-10-23T07:00:00Z"));
        assertThat(weekdays.missedSome(monday, monday.plusSeconds(5))).isFalse();

        // seconds resolution: strictly after the reference, whole seconds even from a fraction
        Schedule everySecond = Schedule.cron("* * * * * *");
        assertThat(everySecond.firstTime(friday)).isEqualTo(Instant.parse("2026-10-16T10:00:01Z"));
        assertThat(everySecond.firstTime(Instant.parse("2026-10-16T10:00:01Z")))
                .isEqualTo(Instant.parse("2026-10-16T10:00:02Z"));

        // daylight saving time in New York: 02:30 does not exist on 8 March 2026 and happens twice on 1 November
        ZoneId newYork = ZoneId.of("America/New_York");
        Schedule nightly = Schedule.cron("30 2 * * *").inZone(newYork);
        Instant springEve = ZonedDateTime.of(2026, 3, 7, 23, 0, 0, 0, newYork).toInstant();
        assertThat(nightly.firstTime(springEve))
                .isEqualTo(ZonedDateTime.of(2026, 3, 9, 2, 30, 0, 0, newYork).toInstant());
        Schedule early = Schedule.cron("30 1 * * *").inZone(newYork);
        Instant fallDay = ZonedDateTime.of(2026, 11, 1, 0, 0, 0, 0, newYork).toInstant();
        Instant firstOneThirty = early.firstTime(fallDay);
        assertThat(firstOneThirty).isEqualTo(Instant.parse("2026-11-01T05:30:00Z")); // 01:30 EDT
        assertThat(early.nextTime(firstOneThirty, firstOneThirty))
                .isEqualTo(Instant.parse("2026-11-02T06:30:00Z")); // not 01:30 EST an hour later
        Schedule hourly = Schedule.cron("0 * * * *").inZone(newYork);
        assertThat(hourly.firstTime(Instant.parse("2026-11-01T05:00:00Z")))
                .isEqualTo(Instant.parse("2026-11-01T06:00:00Z")); // 01:00 EST, the second 01:00

        // a fixed period keeps its rhythm: due + k periods, the first one after now
        Schedule period = Schedule.every(Duration.ofSeconds(10));
        Instant due = Instant.parse("2026-10-16T10:00:00Z");
        assertThat(period.firstTime(due)).isEqualTo(due.plusSeconds(10));
        assertThat(period.nextTime(due, due.plusMillis(3))).isEqualTo(due.plusSeconds(10));
        assertThat(period.nextTime(due, due.plusSeconds(35))).isEqualTo(due.plusSeconds(40));
        assertThat(period.nextTime(due, due.plusSeconds(40))).isEqualTo(due.plusSeconds(50));
        assertThat(period.missedSome(due, due.plusSeconds(35))).isTrue();
        assertThat(period.missedSome(due, due.plusSeconds(9))).isFalse();
    }

    @Test
    void by_default_a_period_is_skipped_while_the_previous_periods_message_still_runs(DataSource dataSource) {
        Topic<Tick> topic = Topic.of("slow-ticks", Tick.class);
        StepGate gate = new StepGate();
        Saga<Tick> slow = Saga.on(topic, "slow-handler").step("hold", step -> gate.pass()).build();
        try (CoopEngine engine = Coop.engine(dataSource).workers(4).register(slow).start()) {
            engine.client().schedule("slow", topic, new Tick("s"), Schedule.every(SECOND));
            gate.awaitArrivals(1, WAIT);
            Await.until("two periods skipped", WAIT, () -> summary(engine.client(), "slow").skipped() >= 2);
            assertThat(fires(dataSource, topic)).hasSize(1);
            assertThat(gate.arrivals()).isEqualTo(1);
            Fire first = fires(dataSource, topic).getFirst();
            assertThat(summary(engine.client(), "slow").lastMessage()).isEqualTo(new MessageId(first.id()));

            gate.open();
            assertThat(engine.client().awaitCompletion(new MessageId(first.id()), WAIT))
                    .isEqualTo(Outcome.COMMITTED);
            List<Fire> fires = Await.value("the schedule to fire again", WAIT, () -> {
                List<Fire> f = fires(dataSource, topic);
                return f.size() >= 2 ? f : null;
            });
            assertThat(fires.get(1).at()).isAfter(finishedAt(dataSource, first.id()));
            assertThat(engine.client().awaitCompletion(new MessageId(fires.get(1).id()), WAIT))
                    .isEqualTo(Outcome.COMMITTED);
        }
    }

    @Test
    void allowing_overlap_fires_every_period_while_earlier_ones_still_run(DataSource dataSource) {
        Topic<Tick> topic = Topic.of("overlapping-ticks", Tick.class);
        StepGate gate = new StepGate();
        Saga<Tick> slow = Saga.on(topic, "overlapping-handler").step("hold", step -> gate.pass()).build();
        try (CoopEngine engine = Coop.engine(dataSource).workers(4).register(slow).start()) {
            engine.client().schedule("overlapping", topic, new Tick("o"), Schedule.every(SECOND).allowingOverlap());
            gate.awaitArrivals(2, WAIT); // two periods in flight at once
            assertThat(summary(engine.client(), "overlapping").skipped()).isZero();
            gate.open();
            for (Fire fire : fires(dataSource, topic)) {
                assertThat(engine.client().awaitCompletion(new MessageId(fire.id()), WAIT))
                        .isEqualTo(Outcome.COMMITTED);
            }
        }
    }

    @Test
    void replacing_a_schedule_keeps_its_next_due_time_unless_its_times_change_and_unscheduling_stops_it(
            DataSource dataSource) {
        Topic<Tick> topic = Topic.of("report-ticks", Tick.class);
        Topic<Tick> metronomeTopic = Topic.of("metronome-ticks", Tick.class);
        Saga<Tick> saga = Saga.on(topic, "report-handler").step("count", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            CoopClient client = engine.client();
            ScheduleSummary hourly = client.schedule("report", topic, new Tick("v1"),
                    Schedule.every(Duration.ofHours(1)));
            assertThat(hourly.nextDue()).isEqualTo(hourly.createdAt().plusHours(1));

            ScheduleSummary again = client.schedule("report", topic, new Tick("v1"),
                    Schedule.every(Duration.ofHours(1)));
            assertThat(again).isEqualTo(hourly); // declared again at a restart: nothing changes

            ScheduleSummary newPayload = client.schedule("report", topic, new Tick("v2"),
                    Schedule.every(Duration.ofHours(1)));
            assertThat(newPayload.nextDue()).isEqualTo(hourly.nextDue());
            assertThat(newPayload.payloadJson()).contains("v2");
            assertThat(newPayload.updatedAt()).isAfter(hourly.updatedAt());

            ScheduleSummary faster = client.schedule("report", topic, new Tick("v2"), Schedule.every(SECOND));
            assertThat(faster.nextDue()).isEqualTo(faster.updatedAt().plus(SECOND));
            Await.until("the faster schedule to fire", WAIT, () -> fires(dataSource, topic).size() == 1);
            assertThat(fires(dataSource, topic).getFirst().payload()).contains("v2");

            // a metronome shows that periods pass while "report" stays quiet
            client.schedule("metronome", metronomeTopic, new Tick("m"), Schedule.every(SECOND));
            ScheduleSummary paused = client.schedule("report", topic, new Tick("v2"), Schedule.every(SECOND).paused());
            assertThat(paused.paused()).isTrue();
            assertThat(paused.nextDue()).isNull();
            int whilePaused = fires(dataSource, topic).size();
            awaitMoreFires(dataSource, metronomeTopic, 2);
            assertThat(fires(dataSource, topic)).hasSize(whilePaused);

            ScheduleSummary resumed = client.schedule("report", topic, new Tick("v3"), Schedule.every(SECOND));
            assertThat(resumed.paused()).isFalse();
            assertThat(resumed.nextDue()).isEqualTo(resumed.updatedAt().plus(SECOND));
            Await.until("the resumed schedule to fire", WAIT,
                    () -> fires(dataSource, topic).getLast().payload().contains("v3"));

            client.unschedule("report");
            assertThat(client.schedules()).extracting(ScheduleSummary::name).containsExactly("metronome");
            int afterUnschedule = fires(dataSource, topic).size();
            awaitMoreFires(dataSource, metronomeTopic, 2);
            assertThat(fires(dataSource, topic)).hasSize(afterUnschedule);
            assertThatThrownBy(() -> client.unschedule("report")).isInstanceOf(CoopValidationException.class)
                    .hasMessage("No schedule 'report' in schema 'coop'");
        }
    }

    @Test
    void a_schedule_declared_in_the_callers_transaction_exists_only_if_it_commits(DataSource dataSource)
            throws SQLException {
        Topic<Tick> topic = Topic.of("outbox-ticks", Tick.class);
        CoopClient client = Coop.client(dataSource);
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            client.schedule(c, "outbox", topic, new Tick("rolled back"), Schedule.every(SECOND));
            c.rollback();
            assertThat(client.schedules()).isEmpty();
            client.schedule(c, "outbox", topic, new Tick("committed"), Schedule.every(SECOND));
            c.commit();
        }
        assertThat(client.schedules()).extracting(ScheduleSummary::name).containsExactly("outbox");
    }

    @Test
    void a_schedule_created_by_a_client_elsewhere_wakes_idle_engines_by_notification(DataSource dataSource) {
        Topic<Tick> topic = Topic.of("remote-ticks", Tick.class);
        Saga<Tick> saga = Saga.on(topic, "remote-handler").step("count", step -> {
        }).build();
        HikariDataSource enginePool = db.newDataSource(12);
        try (CoopEngine engine = Coop.engine(enginePool).pollInterval(LONG_POLL).register(saga).start()) {
            // the engine's timer is waiting up to 30 s; only the notification tells it about the new schedule
            CoopClient elsewhere = Coop.client(dataSource);
            ScheduleSummary created = elsewhere.schedule("remote", topic, new Tick("r"), Schedule.every(SECOND));
            Fire fire = Await.value("the first period", WAIT, () -> {
                List<Fire> f = fires(dataSource, topic);
                return f.isEmpty() ? null : f.getFirst();
            });
            assertThat(Duration.between(created.nextDue().toInstant(), fire.at())).isLessThan(Duration.ofSeconds(5));
            assertThat(fire.engine()).isEqualTo(engine.id());
        }
    }

    @Test
    void a_schedule_created_through_the_engines_client_wakes_it_without_notifications(DataSource dataSource) {
        Topic<Tick> topic = Topic.of("local-ticks", Tick.class);
        Saga<Tick> saga = Saga.on(topic, "local-handler").step("count", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(dataSource).notifications(false).pollInterval(LONG_POLL).register(saga)
                .start()) {
            ScheduleSummary created = engine.client().schedule("local", topic, new Tick("l"),
                    Schedule.every(SECOND));
            Fire fire = Await.value("the first period", WAIT, () -> {
                List<Fire> f = fires(dataSource, topic);
                return f.isEmpty() ? null : f.getFirst();
            });
            assertThat(Duration.between(created.nextDue().toInstant(), fire.at())).isLessThan(Duration.ofSeconds(5));
        }
    }

    @Test
    void engines_sharing_a_database_fire_each_period_once(DataSource dataSource) {
        Topic<Tick> topic = Topic.of("cluster-ticks", Tick.class);
        Saga<Tick> saga = Saga.on(topic, "cluster-tick-handler").step("count", step -> {
        }).build();
        int schedules = 10;
        List<CoopEngine> engines = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                engines.add(Coop.engine(db.newDataSource(6)).name("ticker-" + i).workers(2).register(saga).start());
            }
            CoopClient client = Coop.client(dataSource);
            for (int i = 0; i < schedules; i++) {
                client.schedule("tick-" + i, topic, new Tick("tick-" + i), Schedule.every(SECOND));
            }
            Await.until("every schedule to fire three times", WAIT, () -> {
                Map<String, List<Fire>> byPayload = byPayload(fires(dataSource, topic));
                return byPayload.size() == schedules && byPayload.values().stream().allMatch(f -> f.size() >= 3);
            });
            for (Map.Entry<String, List<Fire>> e : byPayload(fires(dataSource, topic)).entrySet()) {
                List<Fire> fires = e.getValue();
                for (int k = 1; k < fires.size(); k++) {
                    // periods are a second apart; the same period fired twice would be milliseconds apart
                    assertThat(Duration.between(fires.get(k - 1).at(), fires.get(k).at()))
                            .as("%s: fires %d and %d", e.getKey(), k - 1, k)
                            .isGreaterThan(Duration.ofMillis(200));
                }
            }
            assertThat(fires(dataSource, topic)).extracting(Fire::engine)
                    .allMatch(id -> engines.stream().anyMatch(engine -> engine.id().equals(id)));
            for (Fire fire : fires(dataSource, topic)) {
                client.awaitCompletion(new MessageId(fire.id()), WAIT);
            }
            Invariants.assertAll(CoopTables.of(dataSource).allEvents());
        } finally {
            engines.forEach(CoopEngine::close);
        }
    }

    @Test
    void only_engines_with_schedules_on_fire_them(DataSource dataSource) {
        Topic<Tick> topic = Topic.of("opt-out-ticks", Tick.class);
        Saga<Tick> saga = Saga.on(topic, "opt-out-handler").step("count", step -> {
        }).build();
        try (CoopEngine quiet = Coop.engine(db.newDataSource(12)).name("quiet").schedules(false).register(saga)
                .start();
                CoopEngine firing = Coop.engine(db.newDataSource(12)).name("firing").register(saga).start()) {
            quiet.client().schedule("opt-out", topic, new Tick("q"), Schedule.every(SECOND));
            Await.until("three periods", WAIT, () -> fires(dataSource, topic).size() >= 3);
            assertThat(fires(dataSource, topic)).extracting(Fire::engine).containsOnly(firing.id());
        }
    }

    @Test
    void a_schedule_survives_an_engine_restart_and_fires_missed_periods_once(DataSource dataSource) {
        Topic<Tick> topic = Topic.of("restart-ticks", Tick.class);
        Saga<Tick> saga = Saga.on(topic, "restart-handler").step("count", step -> {
        }).build();
        CoopClient client = Coop.client(dataSource);
        ScheduleSummary created;
        try (CoopEngine first = Coop.engine(dataSource).name("before").register(saga).start()) {
            created = first.client().schedule("survivor", topic, new Tick("t"), Schedule.every(SECOND));
            Await.until("the first period", WAIT, () -> fires(dataSource, topic).size() == 1);
        }
        int beforeRestart = fires(dataSource, topic).size();
        // no engine runs while at least three periods come due
        Await.until("three periods to be missed", WAIT,
                () -> databaseNow(dataSource).isAfter(summary(client, "survivor").nextDue().plusSeconds(3)));
        assertThat(fires(dataSource, topic)).hasSize(beforeRestart);
        try (CoopEngine second = Coop.engine(dataSource).name("after").register(saga).start()) {
            Await.until("the missed periods to fire", WAIT, () -> fires(dataSource, topic).size() > beforeRestart);
            ScheduleSummary caughtUp = summary(client, "survivor");
            // one message for the missed periods (at most one more, if the regular time after it came meanwhile)
            assertThat(fires(dataSource, topic).size() - beforeRestart).isLessThanOrEqualTo(2);
            // and the schedule keeps its rhythm: due times stay whole periods after the first one
            long millis = Duration.between(created.nextDue(), caughtUp.nextDue()).toMillis();
            assertThat(millis % 1000).isZero();
            Await.until("regular periods after the restart", WAIT,
                    () -> fires(dataSource, topic).size() >= beforeRestart + 3);
            assertThat(fires(dataSource, topic).getLast().engine()).isEqualTo(second.id());
        }
    }

    @Test
    void bad_input_is_refused_naming_the_problem(DataSource dataSource) {
        assertThatThrownBy(() -> Schedule.cron("61 * * * *")).isInstanceOf(CoopValidationException.class)
                .hasMessageStartingWith("Invalid cron expression '61 * * * *': ")
                .hasMessageContaining("61 not in range");
        assertThatThrownBy(() -> Schedule.cron("every monday")).isInstanceOf(CoopValidationException.class)
                .hasMessage("Invalid cron expression 'every monday': expected 5 fields (minute hour day-of-month"
                        + " month day-of-week) or 6 (a seconds field first), found 2");
        assertThatThrownBy(() -> Schedule.cron("0 9 * * FUNDAY")).isInstanceOf(CoopValidationException.class)
                .hasMessageStartingWith("Invalid cron expression '0 9 * * FUNDAY': ");
        assertThatThrownBy(() -> Schedule.cron(" ")).isInstanceOf(CoopValidationException.class)
                .hasMessage("The cron expression of a schedule is missing");
        assertThatThrownBy(() -> Schedule.every(Duration.ofMillis(999))).isInstanceOf(CoopValidationException.class)
                .hasMessage("The period of a schedule must be between 1 second and 3660 days, was PT0.999S");
        assertThatThrownBy(() -> Schedule.every(Duration.ofSeconds(-5))).isInstanceOf(CoopValidationException.class);
        assertThatThrownBy(() -> Schedule.every(Duration.ofDays(4000))).isInstanceOf(CoopValidationException.class);
        assertThatThrownBy(() -> Schedule.every(Duration.ofNanos(1_000_000_500L)))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("whole milliseconds");
        assertThatThrownBy(() -> Schedule.every(null)).isInstanceOf(CoopValidationException.class)
                .hasMessage("The period of a schedule is missing (null)");
        assertThatThrownBy(() -> Schedule.every(SECOND).inZone("Europe/Paris"))
                .isInstanceOf(CoopValidationException.class)
                .hasMessage("A fixed period does not depend on a time zone; inZone applies to cron schedules");
        assertThatThrownBy(() -> Schedule.cron("0 9 * * *").inZone("Mars/Olympus_Mons"))
                .isInstanceOf(CoopValidationException.class)
                .hasMessageStartingWith("Unknown time zone 'Mars/Olympus_Mons'");

        CoopClient client = Coop.client(dataSource);
        Topic<Tick> topic = Topic.of("bad-input-ticks", Tick.class);
        for (String name : new String[]{"", "with space", "-leading-dash", "x".repeat(201)}) {
            assertThatThrownBy(() -> client.schedule(name, topic, new Tick("b"), Schedule.every(SECOND)))
                    .isInstanceOf(CoopValidationException.class)
                    .hasMessage("Invalid schedule name '" + name
                            + "': use 1 to 200 letters, digits or . _ - : / and start with a letter or digit");
        }
        assertThatThrownBy(() -> client.schedule(null, topic, new Tick("b"), Schedule.every(SECOND)))
                .isInstanceOf(CoopValidationException.class).hasMessage("Schedule name is missing (null)");
        assertThatThrownBy(() -> client.schedule("february-30", topic, new Tick("b"), Schedule.cron("0 0 30 2 *")))
                .isInstanceOf(CoopValidationException.class)
                .hasMessageStartingWith("Schedule 'february-30' would never fire: cron '0 0 30 2 *' in UTC has no"
                        + " time after ");
        assertThatThrownBy(() -> client.unschedule("unknown")).isInstanceOf(CoopValidationException.class)
                .hasMessage("No schedule 'unknown' in schema 'coop'");
        CoopClient small = CoopClient.builder(dataSource).maxPayloadBytes(64).build();
        assertThatThrownBy(() -> small.schedule("big", topic, new Tick("b".repeat(100)), Schedule.every(SECOND)))
                .isInstanceOf(CoopValidationException.class);
        assertThat(client.schedules()).isEmpty();
    }

    // ---- helpers

    private static ScheduleSummary summary(CoopClient client, String name) {
        return client.schedules().stream().filter(s -> s.name().equals(name)).findFirst().orElseThrow();
    }

    /** The messages launched on a topic, oldest first, with the engine that wrote their EMITTED event. */
    private static List<Fire> fires(DataSource dataSource, Topic<?> topic) {
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement("""
                        SELECT m.id, m.created_at, m.payload::text, e.engine
                          FROM coop.message m JOIN coop.event e ON e.message_id = m.id AND e.type = 'EMITTED'
                         WHERE m.topic = ? ORDER BY m.created_at""")) {
            ps.setString(1, topic.name());
            List<Fire> fires = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    fires.add(new Fire(rs.getObject(1, UUID.class), rs.getObject(2, OffsetDateTime.class).toInstant(),
                            rs.getString(3), rs.getString(4)));
                }
            }
            return fires;
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private static Map<String, List<Fire>> byPayload(List<Fire> fires) {
        Map<String, List<Fire>> byPayload = new HashMap<>();
        fires.forEach(f -> byPayload.computeIfAbsent(f.payload(), k -> new ArrayList<>()).add(f));
        return byPayload;
    }

    private static void awaitMoreFires(DataSource dataSource, Topic<?> topic, int more) {
        int now = fires(dataSource, topic).size();
        Await.until(more + " more periods of " + topic.name(), WAIT,
                () -> fires(dataSource, topic).size() >= now + more);
    }

    private static Instant finishedAt(DataSource dataSource, UUID message) {
        return query(dataSource, "SELECT max(finished_at) FROM coop.run WHERE message_id = '" + message + "'");
    }

    private static OffsetDateTime databaseNow(DataSource dataSource) {
        return query(dataSource, "SELECT clock_timestamp()").atOffset(java.time.ZoneOffset.UTC);
    }

    private static Instant query(DataSource dataSource, String sql) {
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement(sql);
                ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getObject(1, OffsetDateTime.class).toInstant();
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
