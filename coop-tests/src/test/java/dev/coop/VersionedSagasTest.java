package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.render.Renderers;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import dev.coop.test.CoopTables;
import dev.coop.test.Invariants;
import dev.coop.test.TestClock;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Versioned sagas and rolling deploys: a run keeps the version it started with; an engine claims only runs of the
 * versions it has and leaves the others runnable for engines that have them, never parking them; an engine with both
 * versions drains the old one; a version is retired once none of its runs is unfinished.
 */
class VersionedSagasTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);

    record Charge(String id, boolean fail, int hours) {
        Charge(String id, boolean fail) {
            this(id, fail, 1);
        }
    }

    static final Topic<Charge> CHARGES = Topic.of("versioned-charges", Charge.class);

    /** What ran, as "v<version>:<what>:<id>", in the order it ran. */
    final List<String> ran = Collections.synchronizedList(new ArrayList<>());

    /** Version 1: reserve, sleep (an hour unless the payload says otherwise), charge (failing on request). */
    Saga<Charge> v1() {
        return Saga.on(CHARGES, "billing")
                .step("reserve", step -> ran.add("v1:reserve:" + step.payload().id()))
                .compensateWith((step, cause) -> ran.add("v1:unreserve:" + step.payload().id()))
                .sleepUntil("cool-off", step -> step.startedAt().plus(Duration.ofHours(step.payload().hours())))
                .step("charge", step -> {
                    ran.add("v1:charge:" + step.payload().id());
                    if (step.payload().fail()) {
                        throw new IllegalStateException("card declined for " + step.payload().id());
                    }
                })
                .build();
    }

    /** Version 2: other steps (a deploy renamed and reordered them), another compensation. */
    Saga<Charge> v2() {
        return Saga.on(CHARGES, "billing").version(2)
                .step("authorize", step -> ran.add("v2:authorize:" + step.payload().id()))
                .compensateWith((step, cause) -> ran.add("v2:void:" + step.payload().id()))
                .step("capture", step -> ran.add("v2:capture:" + step.payload().id()))
                .build();
    }

    @Test
    void v1_and_v2_engines_side_by_side_each_run_their_own_version_then_v1_drains_and_is_retired(
            DataSource dataSource) throws Exception {
        TestClock clock = new TestClock();
        CoopTables tables = CoopTables.of(dataSource);
        CoopClient client = CoopClient.builder(dataSource).clock(clock).build();
        try (CoopEngine v1Engine = Coop.engine(dataSource).name("billing-v1").clock(clock).register(v1()).start()) {
            MessageId commits = client.launch(CHARGES, new Charge("c1", false));
            MessageId failsLater = client.launch(CHARGES, new Charge("c2", true));
            MessageId sleepsLong = client.launch(CHARGES, new Charge("c5", false, 5));
            Await.until("the v1 runs sleep", WAIT, () -> tables.idleAt(clock.now())
                    && List.of(commits, failsLater, sleepsLong).stream().allMatch(m -> suspended(client, m)));

            try (CoopEngine v2Engine = Coop.engine(dataSource).name("billing-v2").clock(clock).register(v2())
                    .start()) { // the rolling deploy: the new engine beside the old one
                assertThat(registeredVersions(dataSource)).containsExactly(1, 2);
                MessageId newRun = client.launch(CHARGES, new Charge("c3", false)); // v2 now: only v2Engine runs it
                assertThat(client.awaitCompletion(newRun, WAIT)).isEqualTo(Outcome.COMMITTED);
                assertThat(client.tree(newRun).runs()).singleElement()
                        .satisfies(run -> assertThat(run.sagaVersion()).isEqualTo(2));
                assertThat(Renderers.text().render(client.tree(newRun))).contains("billing v2");
                assertThat(Renderers.json().render(client.tree(newRun))).contains("\"sagaVersion\" : 2");
                assertThat(engines(client.events(newRun))).containsExactly(v2Engine.id());
                assertThatThrownBy(() -> client.retireSagaVersion("billing", 1))
                        .isInstanceOf(CoopValidationException.class)
                        .hasMessageContaining("Cannot retire version 1 of saga 'billing'")
                        .hasMessageContaining("3 unfinished runs (3 runnable)");

                clock.advance(Duration.ofHours(2)); // c1 and c2 are due: the v1 engine goes on with v1's steps
                assertThat(client.awaitCompletion(commits, WAIT)).isEqualTo(Outcome.COMMITTED);
                assertThat(client.awaitCompletion(failsLater, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
                assertThat(engines(client.events(commits))).containsExactly(v1Engine.id());
                assertThat(engines(client.events(failsLater))).containsExactly(v1Engine.id());

                v1Engine.close(); // the old deploy is gone; c5 still sleeps
                clock.advance(Duration.ofHours(4)); // c5 is due, and only the v2 engine runs
                MessageId another = client.launch(CHARGES, new Charge("c6", false));
                assertThat(client.awaitCompletion(another, WAIT)).isEqualTo(Outcome.COMMITTED);
                // the v2 engine was awake after the time jump and saw the due v1 run: it left it runnable, unparked
                assertThat(client.statuses(sleepsLong)).containsExactly(RunStatus.RUNNABLE);
                assertThat(engines(client.events(sleepsLong))).containsExactly(v1Engine.id());
                assertThat(client.tree(sleepsLong).runs().getFirst().sagaVersion()).isEqualTo(1);
                assertThatThrownBy(() -> client.awaitCompletion(sleepsLong, Duration.ofMillis(50)))
                        .hasMessageContaining("1 run of saga 'billing' runnable with no running engine for version 1"
                                + " of that saga");
                assertThat(client.sagaVersions()).filteredOn(v -> v.saga().equals("billing"))
                        .extracting(v -> v.version() + " " + v.current() + " " + v.unfinishedRuns() + " "
                                + v.stranded())
                        .containsExactly("1 false 1 true", "2 true 0 false");

                // the drain deploy: an engine with v1 beside v2 finishes the v1 run with v1's steps
                try (CoopEngine drain = Coop.engine(dataSource).name("billing-drain").clock(clock)
                        .register(v2(), v1()).start()) {
                    assertThat(client.awaitCompletion(sleepsLong, WAIT)).isEqualTo(Outcome.COMMITTED);
                    assertThat(engines(client.events(sleepsLong))).containsExactlyInAnyOrder(v1Engine.id(),
                            drain.id());
                    MessageId afterDrain = client.launch(CHARGES, new Charge("c4", false));
                    assertThat(client.awaitCompletion(afterDrain, WAIT)).isEqualTo(Outcome.COMMITTED);
                    assertThat(client.tree(afterDrain).runs().getFirst().sagaVersion()).isEqualTo(2);

                    assertThat(client.retireSagaVersion("billing", 1)).isTrue();
                    assertThat(client.retireSagaVersion("billing", 1)).isFalse();
                    assertThat(registeredVersions(dataSource)).containsExactly(2);
                }
                for (MessageId m : List.of(commits, failsLater, sleepsLong, newRun, another)) {
                    Invariants.assertAll(client.events(m));
                }
                assertThat(client.events(commits)).filteredOn(e -> e.type() == EventType.SUSPENDED)
                        .extracting(Event::step).containsExactly("reserve", "cool-off", "charge");
            }
        }
        assertThat(ran).filteredOn(s -> s.endsWith(":c1")).containsExactly("v1:reserve:c1", "v1:charge:c1");
        assertThat(ran).filteredOn(s -> s.endsWith(":c2"))
                .containsExactly("v1:reserve:c2", "v1:charge:c2", "v1:unreserve:c2");
        assertThat(ran).filteredOn(s -> s.endsWith(":c5")).containsExactly("v1:reserve:c5", "v1:charge:c5");
        assertThat(ran).filteredOn(s -> s.endsWith(":c3")).containsExactly("v2:authorize:c3", "v2:capture:c3");
        assertThat(tables.runCount(RunStatus.PARKED)).isZero();
    }

    @Test
    void an_engine_without_the_version_never_claims_its_runs_even_when_woken_for_them(DataSource dataSource) {
        Topic<Charge> topic = Topic.of("versioned-wake", Charge.class);
        Saga<Charge> old = Saga.on(topic, "wake-billing").step("one", step -> ran.add("v1:one")).build();
        Saga<Charge> current = Saga.on(topic, "wake-billing").version(3).step("uno", step -> ran.add("v3:uno"))
                .build();
        CoopClient client = Coop.client(dataSource);
        try (CoopEngine v1 = Coop.engine(dataSource).name("wake-v1").register(old).start()) {
            assertThat(v1.id()).isNotNull(); // registers version 1
        }
        MessageId stale = client.launch(topic, new Charge("s", false)); // no engine runs: a v1 run waits
        try (CoopEngine v3 = Coop.engine(dataSource).name("wake-v3").register(current).start()) {
            touch(dataSource, stale); // a wake-up for the saga, as when a v1 run becomes runnable again
            MessageId fresh = client.launch(topic, new Charge("f", false));
            assertThat(client.awaitCompletion(fresh, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.tree(fresh).runs().getFirst().sagaVersion()).isEqualTo(3);
            assertThat(client.statuses(stale)).containsExactly(RunStatus.RUNNABLE);
            assertThat(client.events(stale)).extracting(Event::type).containsExactly(EventType.EMITTED);
            try (CoopEngine v1 = Coop.engine(dataSource).name("wake-v1").register(old).start()) {
                assertThat(client.awaitCompletion(stale, WAIT)).isEqualTo(Outcome.COMMITTED);
                assertThat(engines(client.events(stale))).containsExactly(v1.id());
            }
            assertThat(engines(client.events(fresh))).containsExactly(v3.id());
        }
        assertThat(ran).containsExactlyInAnyOrder("v3:uno", "v1:one");
    }

    @Test
    void a_launch_by_an_engine_without_the_current_version_wakes_the_engines_that_have_it(DataSource dataSource) {
        Topic<Charge> topic = Topic.of("versioned-notify", Charge.class);
        Saga<Charge> old = Saga.on(topic, "notify-billing").step("one", step -> ran.add("v1:one")).build();
        Saga<Charge> current = Saga.on(topic, "notify-billing").version(2).step("uno", step -> ran.add("v2:uno"))
                .build();
        Duration never = Duration.ofHours(1); // no probe after the first: only a notification wakes an engine
        try (CoopEngine v1 = Coop.engine(dataSource).name("notify-v1").pollInterval(never).register(old).start();
                CoopEngine v2 = Coop.engine(dataSource).name("notify-v2").pollInterval(never).register(current)
                        .start()) {
            // the v1 engine's own client launches: its sagas are quiet for it, but the runs are v2, so it notifies
            for (String id : List.of("n1", "n2")) { // n2 starts after v2's first probe: a notification wakes it
                MessageId m = v1.client().launch(topic, new Charge(id, false));
                assertThat(v1.client().awaitCompletion(m, WAIT)).isEqualTo(Outcome.COMMITTED);
                assertThat(engines(v1.client().events(m))).containsExactly(v2.id());
            }
        }
        assertThat(ran).containsExactly("v2:uno", "v2:uno");
    }

    @Test
    void the_probe_and_the_claim_see_only_the_engines_versions_so_due_runs_of_others_never_keep_it_busy(
            DataSource dataSource) throws SQLException {
        Topic<Charge> topic = Topic.of("versioned-probe", Charge.class);
        Saga<Charge> old = Saga.on(topic, "probe-billing").step("one", step -> {
        }).build();
        Saga<Charge> current = Saga.on(topic, "probe-billing").version(2).step("uno", step -> {
        }).build();
        try (CoopEngine registers = Coop.engine(dataSource).name("probe-v1").register(old).start()) {
            assertThat(registers.id()).startsWith("probe-v1");
        }
        MessageId due = Coop.client(dataSource).launch(topic, new Charge("p", false)); // a v1 run, due now
        dev.coop.internal.store.Store store = new dev.coop.internal.store.Store(
                new dev.coop.internal.store.SchemaName("coop"),
                dev.coop.internal.store.Time.of(null));
        dev.coop.internal.EngineSagas onlyV2 = new dev.coop.internal.EngineSagas(List.of(current));
        dev.coop.internal.EngineSagas both = new dev.coop.internal.EngineSagas(List.of(current, old));
        try (Connection c = dataSource.getConnection()) {
            assertThat(store.probe(c, onlyV2)).doesNotContainKey("probe-billing"); // nothing marks the saga ready
            assertThat(store.probe(c, both).get("probe-billing").firstMillis()).isLessThanOrEqualTo(0);
            c.setAutoCommit(false);
            assertThat(store.claim(c, "probe-billing", 2, "test")).isNull(); // a wake-up costs one empty claim
            assertThat(store.claim(c, "probe-billing", 1, "test").messageId()).isEqualTo(due.value());
            c.rollback();
        }
        assertThat(both.versions("probe-billing")).containsExactly(2, 1);
    }

    @Test
    void retiring_counts_parked_and_rolling_back_runs_and_the_last_version_retires_the_saga(DataSource dataSource) {
        Topic<Charge> topic = Topic.of("versioned-retire", Charge.class);
        Saga<Charge> parks = Saga.on(topic, "retire-billing").version(4)
                .step("fail", step -> {
                    throw new IllegalStateException("always");
                })
                .build();
        CoopClient client = Coop.client(dataSource);
        try (CoopEngine engine = Coop.engine(dataSource).name("retire").register(parks).start()) {
            MessageId m = client.launch(topic, new Charge("r", false));
            assertThat(client.awaitCompletion(m, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
        }
        assertThat(client.retireSagaVersion("retire-billing", 3)).isFalse();
        assertThat(client.retireSagaVersion("no-such-saga", 1)).isFalse();
        // an unfinished run of version 4, put back on the rollback path by hand
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "UPDATE coop.run SET status = 'PARKED', phase = 'ROLLBACK' WHERE saga = 'retire-billing'")) {
            ps.executeUpdate();
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
        assertThatThrownBy(() -> client.retireSagaVersion("retire-billing", 4))
                .hasMessageContaining("1 unfinished run (1 parked; 1 of them rolling back)");
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "UPDATE coop.run SET status = 'ROLLED_BACK' WHERE saga = 'retire-billing'")) {
            ps.executeUpdate();
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
        assertThat(client.retireSagaVersion("retire-billing", 4)).isTrue();
        assertThat(CoopTables.of(dataSource).registeredTopic("retire-billing")).isNull();
    }

    @Test
    void versions_are_validated_when_sagas_are_built_and_registered(DataSource dataSource) {
        Topic<Charge> other = Topic.of("versioned-other", Charge.class);
        assertThatThrownBy(() -> Saga.on(CHARGES, "billing").version(0))
                .isInstanceOf(CoopValidationException.class)
                .hasMessage("version of saga 'billing' must be between 1 and 1000000, was 0");
        assertThatThrownBy(() -> Coop.engine(dataSource).register(v2(), v2()))
                .isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("Two sagas are named 'billing' with version 2");
        assertThatThrownBy(() -> Coop.engine(dataSource).register(v1(),
                Saga.on(other, "billing").version(2).step("x", step -> {
                }).build()))
                .isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("Versions 1 and 2 of saga 'billing' handle different topics");
        assertThat(v2().version()).isEqualTo(2);
        assertThat(v1().version()).isEqualTo(1);
    }

    private static boolean suspended(CoopClient client, MessageId message) {
        return client.events(message).stream()
                .anyMatch(e -> e.type() == EventType.SUSPENDED && "cool-off".equals(e.step()));
    }

    /** The engines that wrote the runs' events (launches by clients write none). */
    private static Set<String> engines(List<Event> events) {
        return events.stream().map(Event::engine).filter(Objects::nonNull)
                .collect(java.util.stream.Collectors.toCollection(java.util.TreeSet::new));
    }

    private static List<Integer> registeredVersions(DataSource dataSource) throws SQLException {
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "SELECT version FROM coop.saga_version WHERE saga = 'billing' ORDER BY version");
                ResultSet rs = ps.executeQuery()) {
            List<Integer> versions = new ArrayList<>();
            while (rs.next()) {
                versions.add(rs.getInt(1));
            }
            return versions;
        }
    }

    /** Moves the message's runs' due time to now: the trigger notifies their saga. */
    private static void touch(DataSource dataSource, MessageId message) {
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "UPDATE coop.run SET runnable_at = clock_timestamp() WHERE message_id = ?")) {
            ps.setObject(1, message.value());
            ps.executeUpdate();
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
