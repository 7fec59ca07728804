package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.test.CoopDatabase;
import dev.coop.test.Invariants;
import dev.coop.test.StepGate;
import dev.coop.test.TestClock;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Several runs advanced in one transaction (a round): each step is atomic on its own (a step that fails rolls back
 * to its own savepoint and fails only its run, the others commit), a run advances one step per transaction, a
 * round that only a rollback can end leaves nothing durable and its runs complete once, and a round stops starting
 * steps once its time is up. Rounds of 8 are forced by launching 8 runs before the engine (one worker, at most 8
 * runs per transaction) starts: its first claim takes them all.
 */
class StepRoundTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(60);
    /**
     * The time of every engine and client here: frozen unless a test moves it, so that a round's time budget (measured
     * with the engine's clock) is spent only when a test says so, however slow the machine.
     */
    static final TestClock CLOCK = new TestClock();

    /** The rounds an engine committed: runs claimed, runs executed. */
    static final class Rounds implements EngineListener {
        final List<int[]> committed = new CopyOnWriteArrayList<>();

        @Override
        public void roundCommitted(String saga, int claimed, int executed) {
            committed.add(new int[]{claimed, executed});
        }

        /**
         * The first round committed: the listener hears of it after the commit, so a test that saw the commit's
         * effects may get here first.
         */
        int[] first() {
            return dev.coop.test.Await.value("a round committed", WAIT, () -> committed.isEmpty()
                    ? null
                    : committed.getFirst());
        }
    }

    @BeforeAll
    static void tables(DataSource dataSource) throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE round_written (what text NOT NULL, pid int NOT NULL)");
            st.execute("CREATE TABLE round_account (id int PRIMARY KEY, n int NOT NULL)");
            st.execute("INSERT INTO round_account SELECT g, 0 FROM generate_series(1, 4) g");
        }
    }

    /** A saga whose first step writes a row named after the payload, then does what {@code then} says. */
    static Saga<String> saga(String name, StepBody<String> then) {
        return Saga.on(Topic.of(name, String.class), name)
                .step("work", step -> {
                    write(step.connection(), name + ":" + step.payload());
                    then.run(step);
                })
                .step("after", step -> {
                })
                .build();
    }

    static void write(Connection c, String what) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                "INSERT INTO round_written (what, pid) VALUES (?, pg_backend_pid())")) {
            ps.setString(1, what);
            ps.executeUpdate();
        }
    }

    static int rows(String what) throws SQLException {
        return rows(db.dataSource(), what);
    }

    static int rows(DataSource dataSource, String what) throws SQLException {
        return count(dataSource, "SELECT count(*) FROM round_written WHERE what = ?", what);
    }

    static int count(String sql, Object value) throws SQLException {
        return count(db.dataSource(), sql, value);
    }

    static int count(DataSource dataSource, String sql, Object value) throws SQLException {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setObject(1, value);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    static CoopEngine.Builder engine(DataSource dataSource, Rounds rounds, Saga<?> saga) {
        return Coop.engine(dataSource).workers(1).maxRunsPerTransaction(8).pollInterval(Duration.ofMillis(100))
                .clock(CLOCK).listener(rounds).register(saga);
    }

    /**
     * Registers the saga (an engine started and closed), then launches {@code payloads} while no engine runs, so
     * that the next engine's first claim finds them all due.
     */
    static Map<String, MessageId> launchBeforeStart(CoopClient client, Saga<String> saga, List<String> payloads) {
        return launchBeforeStart(db.dataSource(), client, saga, payloads);
    }

    static Map<String, MessageId> launchBeforeStart(DataSource dataSource, CoopClient client, Saga<String> saga,
            List<String> payloads) {
        Coop.engine(dataSource).workers(1).clock(CLOCK).register(saga).start().close();
        Map<String, MessageId> ids = new LinkedHashMap<>();
        for (String payload : payloads) {
            ids.put(payload, client.launch(saga.topic(), payload));
        }
        return ids;
    }

    static CoopClient client(DataSource dataSource) {
        return CoopClient.builder(dataSource).clock(CLOCK).build();
    }

    static List<String> okAnd(int at, String odd) {
        List<String> payloads = new ArrayList<>();
        for (int i = 0; i < 7; i++) {
            payloads.add("ok-" + i);
        }
        payloads.add(at, odd);
        return payloads;
    }

    /** Every ok run committed, its first step committed once and its row is durable once. */
    static void assertOthersCommittedOnce(CoopClient client, Saga<String> saga, Map<String, MessageId> ids,
            String odd) throws SQLException {
        for (var e : ids.entrySet()) {
            if (e.getKey().equals(odd)) {
                continue;
            }
            assertThat(client.awaitCompletion(e.getValue(), WAIT)).as(e.getKey()).isEqualTo(Outcome.COMMITTED);
            assertThat(workSteps(client, e.getValue())).as(e.getKey() + ": committed once").isEqualTo(1);
            assertThat(rows(saga.name() + ":" + e.getKey())).as(e.getKey() + ": its write is durable once")
                    .isEqualTo(1);
            Invariants.assertAll(client.events(e.getValue()));
        }
    }

    static long workSteps(CoopClient client, MessageId id) {
        return client.events(id).stream()
                .filter(e -> e.type() == EventType.SUSPENDED && "work".equals(e.step())).count();
    }

    /** Runs {@code odd} at index 3 of a round of 8 and checks that only its run failed. */
    private void onlyItsRunFails(DataSource dataSource, String name, StepBody<String> odd) throws Exception {
        Saga<String> saga = saga(name, step -> {
            if (step.payload().equals("odd")) {
                odd.run(step);
            }
        });
        CoopClient client = client(dataSource);
        Map<String, MessageId> ids = launchBeforeStart(client, saga, okAnd(3, "odd"));
        Rounds rounds = new Rounds();
        try (CoopEngine engine = engine(dataSource, rounds, saga).start()) {
            assertThat(client.awaitCompletion(ids.get("odd"), WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertOthersCommittedOnce(client, saga, ids, "odd");
            assertThat(workSteps(client, ids.get("odd"))).as("the failed step never advanced").isZero();
            assertThat(rows(name + ":odd")).as("nothing the failed step wrote is durable").isZero();
            assertThat(rounds.first()).as("one round of 8").containsExactly(8, 8);
        }
    }

    @Test
    void in_a_round_of_8_a_step_that_throws_fails_only_its_run(DataSource dataSource) throws Exception {
        onlyItsRunFails(dataSource, "round-throws", step -> {
            throw new IllegalStateException("this step fails");
        });
    }

    @Test
    void in_a_round_of_8_a_step_whose_statement_postgresql_refuses_fails_only_its_run(DataSource dataSource)
            throws Exception {
        onlyItsRunFails(dataSource, "round-sql-error", step -> {
            try (Statement st = step.connection().createStatement()) {
                st.execute("SELECT 1 / 0");
            }
        });
    }

    @Test
    void in_a_round_of_8_a_step_that_throws_an_error_fails_only_its_run(DataSource dataSource) throws Exception {
        onlyItsRunFails(dataSource, "round-error", step -> {
            throw new Error("an Error, not an Exception");
        });
    }

    @Test
    void in_a_round_of_8_a_step_that_launches_10000_messages_commits_them_with_its_round(DataSource dataSource)
            throws Exception {
        Topic<String> nobody = Topic.of("round-launched", String.class);
        Saga<String> saga = saga("round-launches", step -> {
            if (step.payload().equals("many")) {
                for (int i = 0; i < 10_000; i++) {
                    step.launchOnGlobalScope(nobody, "m" + i);
                }
            }
        });
        CoopClient client = client(dataSource);
        Map<String, MessageId> ids = launchBeforeStart(client, saga, okAnd(7, "many"));
        Rounds rounds = new Rounds();
        try (CoopEngine engine = engine(dataSource, rounds, saga).start()) {
            assertOthersCommittedOnce(client, saga, ids, null);
            assertThat(count("SELECT count(*) FROM coop.message WHERE topic = ?", nobody.name())).isEqualTo(10_000);
            assertThat(rounds.first()).containsExactly(8, 8);
        }
    }

    @Test
    void a_step_past_the_round_time_budget_ends_the_round_and_the_runs_not_started_go_on_elsewhere(
            DataSource dataSource) throws Exception {
        TestClock clock = CLOCK;
        Saga<String> saga = saga("round-slow", step -> {
            if (step.payload().equals("slow")) {
                clock.advance(Duration.ofSeconds(1)); // the step took a second
            }
        });
        CoopClient client = client(dataSource);
        Coop.engine(dataSource).workers(1).clock(clock).register(saga).start().close();
        Map<String, MessageId> ids = new LinkedHashMap<>();
        for (String payload : okAnd(0, "slow")) {
            ids.put(payload, client.launch(saga.topic(), payload));
            clock.advance(Duration.ofMillis(1)); // due in this order
        }
        Rounds rounds = new Rounds();
        try (CoopEngine engine = engine(dataSource, rounds, saga).start()) {
            assertOthersCommittedOnce(client, saga, ids, null);
            assertThat(rounds.first()).as("claimed 8, executed the slow step only")
                    .containsExactly(8, 1);
        }
    }

    @Test
    void rounds_whose_steps_lock_the_same_rows_in_opposite_order_commit_every_step_once(DataSource dataSource)
            throws Exception {
        Saga<String> saga = Saga.on(Topic.of("round-transfer", String.class), "round-transfer")
                .step("work", step -> {
                    String[] ids = step.payload().split(">");
                    for (String id : new String[]{ids[0], ids[1]}) {
                        try (PreparedStatement ps = step.connection()
                                .prepareStatement("UPDATE round_account SET n = n + 1 WHERE id = ?")) {
                            ps.setInt(1, Integer.parseInt(id));
                            ps.executeUpdate();
                        }
                    }
                })
                .step("after", step -> {
                })
                .build();
        CoopClient client = Coop.client(dataSource); // the database's clock: retried steps come due
        List<String> transfers = new ArrayList<>();
        for (int i = 0; i < 64; i++) {
            int a = 1 + (i / 2) % 2 * 2;
            transfers.add(i % 2 == 0 ? a + ">" + (a + 1) : (a + 1) + ">" + a);
        }
        Coop.engine(dataSource).workers(1).register(saga).start().close();
        List<MessageId> ids = new ArrayList<>();
        transfers.forEach(t -> ids.add(client.launch(saga.topic(), t)));
        Rounds rounds = new Rounds();
        try (CoopEngine a = Coop.engine(db.newDataSource(4)).workers(2).maxRunsPerTransaction(8)
                .listener(rounds).register(saga).start();
                CoopEngine b = Coop.engine(db.newDataSource(4)).workers(2).maxRunsPerTransaction(8)
                        .listener(rounds).register(saga).start()) {
            for (MessageId id : ids) {
                assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
                assertThat(workSteps(client, id)).as("committed once").isEqualTo(1);
            }
            assertThat(count("SELECT sum(n)::int FROM round_account WHERE id > ?", 0)).isEqualTo(2 * 64);
            assertThat(rounds.committed).as("rounds of several runs").isNotEmpty();
        }
    }

    @Test
    void a_round_whose_connection_dies_mid_round_leaves_nothing_durable_and_every_run_completes_once(
            DataSource dataSource) throws Exception {
        StepGate gate = new StepGate();
        Map<String, Integer> pids = new java.util.concurrent.ConcurrentHashMap<>();
        Saga<String> saga = saga("round-killed", step -> {
            if (step.payload().equals("hold") && pids.putIfAbsent("hold", pid(step.connection())) == null) {
                gate.pass(); // held until the test killed the round's connection
            }
        });
        CoopClient client = client(dataSource);
        Map<String, MessageId> ids = launchBeforeStart(client, saga, okAnd(3, "hold"));
        Rounds rounds = new Rounds();
        try (CoopEngine first = engine(db.newDataSource(3), rounds, saga).start()) {
            gate.awaitArrivals(1, WAIT);
            int pid = pids.get("hold");
            assertThat(count("SELECT count(*)::int FROM pg_terminate_backend(?) t WHERE t", pid)).isEqualTo(1);
            try (CoopEngine second = engine(db.newDataSource(3), new Rounds(), saga).start()) {
                assertOthersCommittedOnce(client, saga, ids, null);
                assertThat(count("SELECT count(*) FROM round_written WHERE what LIKE 'round-killed:%' AND pid = ?",
                        pid))
                        .as("nothing of the killed round is durable").isZero();
                for (MessageId id : ids.values()) {
                    assertThat(client.events(id)).extracting(Event::engine).as("nothing committed by the first")
                            .doesNotContain(first.id());
                }
            } finally {
                gate.open();
            }
        } finally {
            gate.open();
        }
        assertThat(rounds.committed).as("the killed round never committed").isEmpty();
    }

    static int pid(Connection c) throws SQLException {
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT pg_backend_pid()")) {
            rs.next();
            return rs.getInt(1);
        }
    }

    @Test
    void a_run_due_alone_commits_alone_and_a_saga_that_opts_out_never_shares_a_transaction(DataSource dataSource)
            throws Exception {
        Saga<String> alone = saga("round-alone", step -> {
        });
        Saga<String> optedOut = Saga.on(Topic.of("round-opted-out", String.class), "round-opted-out")
                .step("work", step -> write(step.connection(), "round-opted-out:" + step.payload()))
                .transactionPerStep().build();
        CoopClient client = client(dataSource);
        Map<String, MessageId> ids = launchBeforeStart(client, optedOut, okAnd(0, "first"));
        Rounds rounds = new Rounds();
        try (CoopEngine engine = Coop.engine(dataSource).workers(1).maxRunsPerTransaction(8).clock(CLOCK)
                .listener(rounds).register(alone, optedOut).start()) {
            for (MessageId id : ids.values()) {
                assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            }
            MessageId single = engine.client().launch(alone.topic(), "single");
            assertThat(client.awaitCompletion(single, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(rounds.committed).isEmpty();
        }
    }

    /**
     * Steps that never use their connection leave their advances to the round, which writes them all in one statement:
     * the log, the step history (each iteration of a loop, walked back by a rollback) and the runs' state come out as
     * they do one run per transaction.
     */
    @Test
    void in_rounds_of_8_advances_written_together_keep_each_runs_log_and_history(DataSource dataSource)
            throws Exception {
        Map<String, List<String>> compensated = new java.util.concurrent.ConcurrentHashMap<>();
        Saga<String> saga = Saga.on(Topic.of("round-quiet", String.class), "round-quiet")
                .flowStep("loop", step -> step.iteration() < 3 ? Flow.repeat() : Flow.next())
                .compensateWith((step, cause) -> compensated
                        .computeIfAbsent(step.payload(), p -> new CopyOnWriteArrayList<>())
                        .add("loop " + step.iteration()))
                .step("check", step -> {
                    if (step.payload().equals("odd")) {
                        throw new IllegalStateException("odd fails after its loop");
                    }
                })
                .build();
        CoopClient client = client(dataSource);
        Map<String, MessageId> ids = launchBeforeStart(client, saga, okAnd(5, "odd"));
        Rounds rounds = new Rounds();
        try (CoopEngine engine = engine(dataSource, rounds, saga).start()) {
            for (Map.Entry<String, MessageId> e : ids.entrySet()) {
                Outcome expected = e.getKey().equals("odd") ? Outcome.ROLLED_BACK : Outcome.COMMITTED;
                assertThat(client.awaitCompletion(e.getValue(), WAIT)).as(e.getKey()).isEqualTo(expected);
                List<EventType> types = client.events(e.getValue()).stream()
                        .filter(x -> "loop".equals(x.step())).map(Event::type).toList();
                assertThat(types)
                        .as(e.getKey() + ": a SUSPENDED per loop iteration "
                                + client.events(e.getValue()).stream().map(x -> x.type() + "/" + x.step()).toList())
                        .hasSize(3);
                Invariants.assertAll(client.events(e.getValue()));
            }
            assertThat(compensated).containsOnlyKeys("odd");
            assertThat(compensated.get("odd")).containsExactly("loop 3", "loop 2", "loop 1");
            assertThat(rounds.committed).as("the loop's three iterations in rounds of 8")
                    .filteredOn(r -> r[1] == 8).hasSizeGreaterThanOrEqualTo(3);
        }
    }

    /**
     * Runs that finish in a round are written with the others; their messages' join memberships are checked before
     * the commit, and settled in the same transaction when pending.
     */
    @Test
    void runs_that_finish_in_a_round_settle_their_join_memberships_with_its_commit(DataSource dataSource)
            throws Exception {
        Saga<String> saga = Saga.on(Topic.of("round-joined", String.class), "round-joined").step("only", step -> {
        }).build();
        CoopClient client = client(dataSource);
        Map<String, MessageId> ids = launchBeforeStart(client, saga, okAnd(0, "first"));
        dev.coop.join.Joins joins = client.joins();
        dev.coop.join.JoinId join = joins.start(dev.coop.join.JoinSpec.expecting(8)
                .onComplete(Topic.of("round-joined-done", dev.coop.join.JoinResult.class))
                .onFail(Topic.of("round-joined-failed", dev.coop.join.JoinResult.class)));
        for (MessageId id : ids.values()) {
            joins.attach(join, id);
        }
        Rounds rounds = new Rounds();
        try (CoopEngine engine = engine(dataSource, rounds, saga).start()) {
            for (MessageId id : ids.values()) {
                assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            }
            dev.coop.join.JoinView view = dev.coop.test.Await.value("the join completed", WAIT, () -> {
                dev.coop.join.JoinView v = joins.get(join);
                return v.status() == dev.coop.join.JoinStatus.COMPLETED ? v : null;
            });
            assertThat(view.completed()).isEqualTo(8);
            assertThat(rounds.first()).as("one round of 8").containsExactly(8, 8);
        }
    }
}
