package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.test.CoopDatabase;
import dev.coop.test.Invariants;
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
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Nothing a step does to its transaction or its session reaches another run's step or Coop's own statements. The
 * probe of each route: one engine, one worker, rounds of up to 8 runs, a pool of 3; eight runs of one saga committed
 * as one round, the fourth run's step poisons its transaction or its session after its write, then eight more runs on
 * the same pool. Every run commits once, every other step sees its connection as a clean one does, every write lands
 * in the table it names, and nothing loops.
 */
class StepPoisonTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(60);
    static final String ROLE = "coop_poison_role";
    /** Frozen unless a launch moves it: a round's budget is never spent here, however slow the machine. */
    static final TestClock CLOCK = new TestClock();

    /** What a step sees of its connection: the state a poisoner could have left there. */
    static final String OBSERVE = """
            SELECT concat_ws(' | ',
                     'user=' || current_user, 'session=' || session_user,
                     'path=' || current_setting('search_path'),
                     'tenant=' || coalesce(current_setting('app.tenant', true), ''),
                     'sess=' || coalesce(current_setting('app.sess', true), ''),
                     'temp=' || coalesce(to_regclass('pg_temp.obs_target')::text, ''),
                     'advisory=' || (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'
                                      AND pid = pg_backend_pid() AND objid IN (4242, 4343)),
                     'prepared=' || (SELECT count(*) FROM pg_prepared_statements WHERE from_sql),
                     'cursors=' || (SELECT count(*) FROM pg_cursors WHERE name = 'poison_cur'),
                     'listening=' || (SELECT count(*) FROM pg_listening_channels()),
                     'read_only=' || current_setting('transaction_read_only') || '/'
                                  || current_setting('default_transaction_read_only'),
                     'statement_timeout=' || current_setting('statement_timeout'),
                     'lock_timeout=' || current_setting('lock_timeout'))
            """;

    @BeforeAll
    static void tables(DataSource dataSource) throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE obs_target (what text NOT NULL)");
            st.execute("CREATE SCHEMA evil");
            st.execute("CREATE TABLE evil.obs_target (what text NOT NULL)");
            st.execute("GRANT ALL ON SCHEMA evil TO PUBLIC");
            st.execute("GRANT ALL ON evil.obs_target TO PUBLIC");
            st.execute("DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '" + ROLE + "') THEN"
                    + " CREATE ROLE " + ROLE + "; END IF; END $$");
        }
    }

    /**
     * The routes: a name, what the fourth run's step does after its write, and how many runs the first round
     * executes (a step that keeps what only the transaction's end lets go ends the round's shared part).
     */
    static Stream<Arguments> routes() {
        return Stream.of(
                Arguments.of("local-search-path", "SET LOCAL search_path = evil, public", 8),
                Arguments.of("local-tenant", "SELECT set_config('app.tenant', 'tenant-A', true)", 8),
                Arguments.of("temp-on-commit-drop", "CREATE TEMP TABLE obs_target (what text) ON COMMIT DROP", 8),
                Arguments.of("xact-advisory-lock", "SELECT pg_advisory_xact_lock(4242)", 4),
                Arguments.of("session-read-only", "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY", 8),
                Arguments.of("default-read-only", "SET default_transaction_read_only = on", 8),
                Arguments.of("set-role", "SET ROLE " + ROLE, 8),
                Arguments.of("session-authorization", "SET SESSION AUTHORIZATION " + ROLE, 8),
                Arguments.of("session-setting", "SELECT set_config('app.sess', 'tenant-B', false)", 8),
                Arguments.of("session-advisory-lock", "SELECT pg_advisory_lock(4343)", 8),
                Arguments.of("sql-prepare", "PREPARE poison_stmt AS SELECT 1", 8),
                Arguments.of("with-hold-cursor", "DECLARE poison_cur CURSOR WITH HOLD FOR SELECT 1", 8),
                Arguments.of("listen", "LISTEN poison_chan", 8),
                Arguments.of("local-statement-timeout", "SET LOCAL statement_timeout = 1", 8),
                Arguments.of("local-lock-timeout", "SET LOCAL lock_timeout = 1", 8));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("routes")
    void what_a_step_does_to_its_connection_reaches_no_other_run(String route, String poison, int firstRound)
            throws Exception {
        Map<String, List<String>> seen = new ConcurrentHashMap<>();
        Map<String, AtomicInteger> ran = new ConcurrentHashMap<>();
        Saga<String> saga = Saga.on(Topic.of("poison-" + route, String.class), "poison-" + route)
                .step("work", step -> {
                    String payload = step.payload();
                    ran.computeIfAbsent(payload, p -> new AtomicInteger()).incrementAndGet();
                    Connection c = step.connection();
                    if (!payload.equals("poisoner")) {
                        seen.computeIfAbsent(payload, p -> new CopyOnWriteArrayList<>()).add(observe(c));
                    }
                    try (PreparedStatement ps = c.prepareStatement("INSERT INTO obs_target (what) VALUES (?)")) {
                        ps.setString(1, route + ":" + payload);
                        ps.executeUpdate();
                    }
                    if (payload.equals("poisoner")) {
                        try (Statement st = c.createStatement()) {
                            st.execute(poison);
                        }
                    }
                })
                .build();
        try (var pool = db.newDataSource(3)) {
            String clean = clean(pool);
            CoopClient client = CoopClient.builder(pool).clock(CLOCK).build();
            Coop.engine(pool).workers(1).clock(CLOCK).register(saga).start().close(); // registers the saga
            Map<String, MessageId> ids = new LinkedHashMap<>();
            List<String> first = new ArrayList<>(List.of("a0", "a1", "a2", "poisoner", "a4", "a5", "a6", "a7"));
            for (String payload : first) {
                ids.put(payload, client.launch(saga.topic(), payload));
                CLOCK.advance(Duration.ofMillis(1)); // due in this order: the poisoner is the round's fourth
            }
            StepRoundTest.Rounds rounds = new StepRoundTest.Rounds();
            try (CoopEngine engine = Coop.engine(pool).workers(1).maxRunsPerTransaction(8)
                    .pollInterval(Duration.ofMillis(100)).clock(CLOCK).listener(rounds).register(saga).start()) {
                awaitCommitted(client, ids);
                for (int i = 0; i < 8; i++) {
                    ids.put("b" + i, client.launch(saga.topic(), "b" + i));
                }
                awaitCommitted(client, ids);
            }
            for (var e : ids.entrySet()) {
                String payload = e.getKey();
                assertThat(workSteps(client, e.getValue())).as(payload + ": committed once").isEqualTo(1);
                assertThat(rows("SELECT count(*) FROM public.obs_target WHERE what = ?", route + ":" + payload))
                        .as(payload + ": its write landed where it said, once").isEqualTo(1);
                Invariants.assertAll(client.events(e.getValue()));
                if (!payload.equals("poisoner")) {
                    assertThat(seen.get(payload)).as(payload + " saw a clean connection").containsOnly(clean);
                    assertThat(ran.get(payload).get()).as(payload + ": its code ran once").isEqualTo(1);
                }
            }
            assertThat(ran.get("poisoner").get()).as("the poisoner's code did not loop").isLessThanOrEqualTo(2);
            assertThat(rows("SELECT count(*) FROM evil.obs_target WHERE what LIKE ?", route + ":%"))
                    .as("nothing was written into the poisoner's schema").isZero();
            assertThat(rounds.first()).as("the first round: claimed, executed")
                    .containsExactly(8, firstRound);
        }
    }

    /**
     * A step that makes its transaction read-only cannot be committed: it fails alone, as its own failure (no retry
     * policy here: its run rolls back), its write undone; the round's other runs commit in the same transaction, and
     * nothing loops.
     */
    @org.junit.jupiter.api.Test
    void a_step_that_makes_its_transaction_read_only_fails_alone_and_the_round_commits() throws Exception {
        Map<String, AtomicInteger> ran = new ConcurrentHashMap<>();
        Saga<String> saga = Saga.on(Topic.of("poison-read-only", String.class), "poison-read-only")
                .step("work", step -> {
                    ran.computeIfAbsent(step.payload(), p -> new AtomicInteger()).incrementAndGet();
                    Connection c = step.connection();
                    try (PreparedStatement ps = c.prepareStatement("INSERT INTO obs_target (what) VALUES (?)")) {
                        ps.setString(1, "read-only:" + step.payload());
                        ps.executeUpdate();
                    }
                    if (step.payload().equals("poisoner")) {
                        try (Statement st = c.createStatement()) {
                            st.execute("SET TRANSACTION READ ONLY");
                        }
                    }
                })
                .build();
        try (var pool = db.newDataSource(3)) {
            CoopClient client = CoopClient.builder(pool).clock(CLOCK).build();
            Coop.engine(pool).workers(1).clock(CLOCK).register(saga).start().close();
            Map<String, MessageId> ids = new LinkedHashMap<>();
            for (String payload : List.of("a0", "a1", "a2", "poisoner", "a4", "a5", "a6", "a7")) {
                ids.put(payload, client.launch(saga.topic(), payload));
                CLOCK.advance(Duration.ofMillis(1));
            }
            StepRoundTest.Rounds rounds = new StepRoundTest.Rounds();
            try (CoopEngine engine = Coop.engine(pool).workers(1).maxRunsPerTransaction(8)
                    .pollInterval(Duration.ofMillis(100)).clock(CLOCK).listener(rounds).register(saga).start()) {
                assertThat(client.awaitCompletion(ids.remove("poisoner"), WAIT)).isEqualTo(Outcome.ROLLED_BACK);
                awaitCommitted(client, ids);
            }
            assertThat(rows("SELECT count(*) FROM obs_target WHERE what = ?", "read-only:poisoner"))
                    .as("the failed step's write was undone").isZero();
            assertThat(rows("SELECT count(*) FROM obs_target WHERE what LIKE ?", "read-only:a%")).isEqualTo(7);
            assertThat(ran.values()).as("every step's code ran once").allMatch(n -> n.get() == 1);
            assertThat(rounds.first()).as("one round of 8").containsExactly(8, 8);
        }
    }

    /**
     * The reset costs one round trip (one statement prepared), and only after a step that used its connection: a
     * saga of two steps, the first using its connection and the second not, gets one reset per run.
     */
    @org.junit.jupiter.api.Test
    void only_a_step_that_used_its_connection_gets_it_reset_in_one_round_trip() throws Exception {
        Saga<String> saga = Saga.on(Topic.of("poison-count", String.class), "poison-count")
                .step("uses", step -> {
                    try (Statement st = step.connection().createStatement()) {
                        st.execute("SELECT 1");
                    }
                })
                .step("not", step -> {
                })
                .build();
        List<String> sent = new CopyOnWriteArrayList<>();
        try (var pool = db.newDataSource(3)) {
            DataSource recording = RecordingDataSource.of(pool, sent);
            try (CoopEngine engine = Coop.engine(recording).workers(1).pollInterval(Duration.ofMillis(100))
                    .clock(CLOCK).register(saga).start()) {
                List<MessageId> ids = new ArrayList<>();
                for (int i = 0; i < 5; i++) {
                    ids.add(engine.client().launch(saga.topic(), "r" + i));
                }
                for (MessageId id : ids) {
                    assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
                }
            }
        }
        assertThat(sent.stream().filter(sql -> sql.contains("RESET ALL")).count())
                .as("one reset per run: after its first step, not after its second").isEqualTo(5);
    }

    /**
     * A connection whose session makes Coop's own statements fail (a role without Coop's privileges here, set before
     * Coop got it, as no step can leave it now) is evicted from its pool, not handed back: the worker's next claim gets
     * a fresh one and every run commits, where such a connection once failed every later claim. (A read-only default
     * would not do: a worker's probe only reads, so the connection went back to the pool, and another thread of the
     * engine, that only listens, could keep it for good.)
     */
    @org.junit.jupiter.api.Test
    void a_connection_whose_session_fails_coops_statements_is_evicted_not_handed_back() throws Exception {
        Saga<String> saga = Saga.on(Topic.of("poison-evict", String.class), "poison-evict")
                .step("work", step -> {
                    try (PreparedStatement ps = step.connection()
                            .prepareStatement("INSERT INTO obs_target (what) VALUES (?)")) {
                        ps.setString(1, "evict:" + step.payload());
                        ps.executeUpdate();
                    }
                })
                .build();
        List<Integer> poisoned = new CopyOnWriteArrayList<>();
        try (var pool = db.newDataSource(3)) {
            // the first connection a worker takes comes with a role that may not read Coop's tables
            DataSource poisoning = (DataSource) java.lang.reflect.Proxy.newProxyInstance(
                    DataSource.class.getClassLoader(), new Class<?>[]{DataSource.class}, (proxy, method, args) -> {
                        Object result = method.invoke(pool, args);
                        if (result instanceof Connection c && poisoned.isEmpty()
                                && Thread.currentThread().getName().contains("-worker-")) {
                            try (Statement st = c.createStatement()) {
                                st.execute("SET ROLE " + ROLE);
                                try (ResultSet rs = st.executeQuery("SELECT pg_backend_pid()")) {
                                    rs.next();
                                    poisoned.add(rs.getInt(1));
                                }
                            }
                        }
                        return result;
                    });
            CoopClient client = CoopClient.builder(db.dataSource()).clock(CLOCK).build();
            try (CoopEngine engine = Coop.engine(poisoning).workers(1).pollInterval(Duration.ofMillis(100))
                    .clock(CLOCK).register(saga).start()) {
                Map<String, MessageId> ids = new LinkedHashMap<>();
                for (int i = 0; i < 8; i++) {
                    ids.put("e" + i, client.launch(saga.topic(), "e" + i));
                }
                awaitCommitted(client, ids);
                assertThat(poisoned).as("a worker got the connection with the other role").hasSize(1);
                dev.coop.test.Await.until("the connection with the other role is closed", WAIT,
                        () -> connected(poisoned.getFirst()) == 0);
            }
        }
    }

    private static void awaitCommitted(CoopClient client, Map<String, MessageId> ids) {
        for (var e : ids.entrySet()) {
            assertThat(client.awaitCompletion(e.getValue(), WAIT)).as(e.getKey()).isEqualTo(Outcome.COMMITTED);
        }
    }

    /** What a step sees on a fresh connection of the pool, in a transaction as Coop's. */
    private static String clean(DataSource pool) throws SQLException {
        try (Connection c = pool.getConnection()) {
            c.setAutoCommit(false);
            try {
                return observe(c);
            } finally {
                c.rollback();
                c.setAutoCommit(true);
            }
        }
    }

    static String observe(Connection c) throws SQLException {
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(OBSERVE)) {
            rs.next();
            return rs.getString(1);
        }
    }

    /** How many sessions of the server have the backend process {@code pid} (1 or 0). */
    static int connected(int pid) {
        try {
            return rows("SELECT count(*) FROM pg_stat_activity WHERE pid = ?::text::int", String.valueOf(pid));
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    static int rows(String sql, String value) throws SQLException {
        try (Connection c = db.dataSource().getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, value);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    static long workSteps(CoopClient client, MessageId id) {
        return client.events(id).stream()
                .filter(e -> e.type() == EventType.SUSPENDED && "work".equals(e.step())).count();
    }
}
