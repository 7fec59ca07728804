package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.inspect.Outcome;
import dev.coop.test.Await;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.coop.test.CoopDatabase;
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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The relation locks a step's transaction holds, read from the database: {@code pg_locks} of the engine's backend
 * while the transaction is still open. A backend of PostgreSQL 15-17 has 16 fast-path slots for weak relation locks
 * (one per relation: table, index or sequence); every relation beyond them goes to the shared lock table, whose
 * partitioned hash a busy server then pays for on every statement.
 *
 * <p>
 * A W1-like saga (three plain steps) runs while this test holds advisory locks that stop each of its transactions
 * twice, by two triggers on {@code event} that the test installs and that lock no relation: at the end of the
 * statement that wrote the step's SUSPENDED (the advance; an INSERT's or UPDATE's index locks are released at its
 * statement's end, so this is the transaction's peak) and, deferred, at its COMMIT (what it keeps). The first step
 * also blocks on a latch in its user code, so that the claim's own locks are read first. Every figure is printed
 * (docs/performance.md, "Relations and locks per step"); asserted: once its statements run from cached generic plans,
 * what a step's transaction keeps is within the slots.
 */
class StepLocksTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);

    /** A backend's fast-path slots for relation locks (FP_LOCK_SLOTS_PER_BACKEND, PostgreSQL 15-17). */
    static final int FAST_PATH_SLOTS = 16;

    /**
     * The advisory lock class of the stops. The second key: twice the step's number, or {@link #LAUNCH} for the
     * launch, plus where the transaction stops ({@link #AT_STATEMENT_END} or {@link #AT_COMMIT}).
     */
    static final int STOP_CLASS = 7_337;
    static final int LAUNCH = 100;
    static final int AT_STATEMENT_END = 0;
    static final int AT_COMMIT = 1;

    static final Topic<Empty> TOPIC = Topic.of("locks-w1", Empty.class);
    static final String SAGA = "locks-w1-saga";

    @BeforeAll
    static void stopsAtCommit(DataSource dataSource) throws SQLException {
        Coop.engine(dataSource).register(Saga.on(TOPIC, SAGA).step("s0", step -> {
        }).build()).start().close();
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("""
                    CREATE FUNCTION coop.test_stop() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN
                      PERFORM pg_advisory_xact_lock(%d, TG_ARGV[0]::int
                          + CASE WHEN NEW.saga IS NULL THEN %d ELSE 2 * substr(NEW.step, 2)::int END);
                      RETURN NULL;
                    END $$""".formatted(STOP_CLASS, LAUNCH));
            String stopped = "WHEN ((NEW.type = 'SUSPENDED' AND NEW.saga = '%s') OR (NEW.type = 'EMITTED' AND NEW.saga IS NULL))"
                    .formatted(SAGA);
            // at the end of the statement that wrote the event: its index locks, released at the statement's end, held
            st.execute("CREATE TRIGGER test_stop_at_statement_end AFTER INSERT ON coop.event FOR EACH ROW " + stopped
                    + " EXECUTE FUNCTION coop.test_stop(" + AT_STATEMENT_END + ")");
            // at COMMIT, after every statement of the transaction
            st.execute("CREATE CONSTRAINT TRIGGER test_stop_at_commit AFTER INSERT ON coop.event"
                    + " DEFERRABLE INITIALLY DEFERRED FOR EACH ROW " + stopped
                    + " EXECUTE FUNCTION coop.test_stop(" + AT_COMMIT + ")");
        }
    }

    /** Sagas run before the warm measurement: enough for pgjdbc's and the server's plan caches to settle. */
    static final int WARM_UP = 30;

    @Test
    void a_plain_steps_transactions_keep_their_relation_locks_in_the_fast_path_slots(DataSource dataSource)
            throws Exception {
        Map<String, List<Lock>> asPlanned = new LinkedHashMap<>();
        run(dataSource, asPlanned, "as planned, first saga: ", "as planned, warm: ");
        Map<String, List<Lock>> generic = new LinkedHashMap<>();
        try (HikariDataSource genericPlans = genericPlans()) {
            run(genericPlans, generic, null, "generic plans, warm: ");
        }
        print(asPlanned);
        print(generic);
        // what a prepared statement's cached plan holds to the end of its transaction: no index it does not read
        // (a launch is the client's transaction, not a step's; at a statement's end its index locks are still held)
        generic.entrySet().stream().filter(e -> !e.getKey().endsWith("end") && !e.getKey().contains("launch"))
                .forEach(e -> assertThat(e.getValue())
                        .as("%s holds %d relation locks (%s)", e.getKey(), e.getValue().size(), e.getValue())
                        .allMatch(l -> l.fastPath)
                        .hasSizeLessThanOrEqualTo(FAST_PATH_SLOTS));
    }

    /**
     * Runs the W1-like saga on an engine of its own on {@code dataSource}: measured first (unless {@code first} is
     * null), then after {@link #WARM_UP} sagas.
     */
    private static void run(DataSource dataSource, Map<String, List<Lock>> held, String first, String warm)
            throws Exception {
        AtomicReference<CountDownLatch[]> blocking = new AtomicReference<>();
        Saga<Empty> saga = Saga.on(TOPIC, SAGA)
                .step("s0", step -> {
                    CountDownLatch[] latches = blocking.getAndSet(null);
                    if (latches != null) {
                        latches[0].countDown();
                        await(latches[1]);
                    }
                })
                .step("s1", step -> {
                })
                .step("s2", step -> {
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).workers(1).register(saga).start();
                Connection stops = db.dataSource().getConnection()) {
            Stops stop = new Stops(db.dataSource(), stops, held);
            if (first != null) {
                measure(engine, stop, blocking, first);
            }
            for (int i = 0; i < WARM_UP; i++) {
                MessageId id = engine.client().launch(TOPIC, new Empty());
                assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            }
            measure(engine, stop, blocking, warm);
        }
    }

    /**
     * A pool whose sessions use generic plans only: after pgjdbc prepares a statement on the server (its fifth
     * execution), the server plans it once and reuses that plan, whose executor locks only the relations it reads.
     * Without it the server may plan each execution afresh (a custom plan), and planning locks every index of every
     * relation the statement names, held to the end of the transaction: which one it chooses depends on estimates.
     */
    private static HikariDataSource genericPlans() {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(db.jdbcUrl());
        config.setUsername(db.server().user());
        config.setPassword(db.server().password());
        config.setMaximumPoolSize(6);
        config.setConnectionInitSql("SET plan_cache_mode = force_generic_plan");
        return new HikariDataSource(config);
    }

    private static void print(Map<String, List<Lock>> held) {
        held.forEach((transaction, locks) -> System.out.printf("%s: %d relations, %d outside the fast path: %s%n",
                transaction, locks.size(), locks.stream().filter(l -> !l.fastPath).count(), locks));
    }

    /** Runs one saga through every stop, reading the locks held at each. */
    private static void measure(CoopEngine engine, Stops stop, AtomicReference<CountDownLatch[]> blocking,
            String prefix) throws Exception {
        CountDownLatch inStep = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        blocking.set(new CountDownLatch[]{inStep, release});
        stop.hold(LAUNCH, LAUNCH + 1, 0, 1, 2, 3, 4, 5);
        var launch = CompletableFuture.supplyAsync(() -> engine.client().launch(TOPIC, new Empty()));
        stop.read(prefix + "launch, at the statement's end", LAUNCH + AT_STATEMENT_END);
        stop.read(prefix + "launch, at commit", LAUNCH + AT_COMMIT);
        MessageId id = launch.get(WAIT.toSeconds(), TimeUnit.SECONDS);

        assertThat(inStep.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
        stop.held().put(prefix + "claim, in the step", locksOf(stop.dataSource(), runningStep(stop.dataSource())));
        release.countDown();
        stop.read(prefix + "claim + continuing advance, at the advance's end", AT_STATEMENT_END);
        stop.read(prefix + "claim + continuing advance, at commit", AT_COMMIT);
        stop.read(prefix + "reclaim + continuing advance, at the advance's end", 2 + AT_STATEMENT_END);
        stop.read(prefix + "reclaim + continuing advance, at commit", 2 + AT_COMMIT);
        stop.read(prefix + "reclaim + finishing advance, at the advance's end", 4 + AT_STATEMENT_END);
        stop.read(prefix + "reclaim + finishing advance, at commit", 4 + AT_COMMIT);
        assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
    }

    /** A relation lock a backend holds: the relation, its modes, and whether every mode sits in a fast-path slot. */
    record Lock(String relation, String modes, boolean fastPath) {
        @Override
        public String toString() {
            return relation + (fastPath ? "" : "(!)");
        }
    }

    private static void await(CountDownLatch latch) {
        try {
            if (!latch.await(WAIT.toSeconds(), TimeUnit.SECONDS)) {
                throw new IllegalStateException("the test never released the step");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** The stops this test holds on {@code stops} (session advisory locks) and the locks read at each. */
    record Stops(DataSource dataSource, Connection stops, Map<String, List<Lock>> held) {
        void hold(int... keys) throws SQLException {
            for (int key : keys) {
                advisory("pg_advisory_lock", key);
            }
        }

        /** Reads the relation locks of the backend that waits at the stop {@code key}, once one does; lets it go. */
        void read(String label, int key) throws SQLException {
            int pid = Await.value("a transaction waiting at stop " + key, WAIT, () -> query(dataSource, """
                    SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = ? AND objid = ?
                    """, ps -> {
                ps.setInt(1, STOP_CLASS);
                ps.setInt(2, key);
            }, rs -> rs.next() ? rs.getInt(1) : null));
            held.put(label, locksOf(dataSource, pid));
            advisory("pg_advisory_unlock", key);
        }

        private void advisory(String function, int key) throws SQLException {
            try (PreparedStatement ps = stops.prepareStatement("SELECT " + function + "(?, ?)")) {
                ps.setInt(1, STOP_CLASS);
                ps.setInt(2, key);
                ps.execute();
            }
        }
    }

    /** The backend whose transaction runs the step (the claim names it in application_name). */
    private static int runningStep(DataSource dataSource) {
        return query(dataSource, "SELECT pid FROM pg_stat_activity WHERE application_name LIKE 'coop %'",
                ps -> {
                }, rs -> {
                    assertThat(rs.next()).as("a backend running a step").isTrue();
                    return rs.getInt(1);
                });
    }

    private static List<Lock> locksOf(DataSource dataSource, int pid) {
        return query(dataSource, """
                SELECT l.relation::regclass::text, string_agg(l.mode, ',' ORDER BY l.mode), bool_and(l.fastpath)
                  FROM pg_locks l
                 WHERE l.pid = ? AND l.locktype = 'relation' AND l.granted
                   AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                 GROUP BY l.relation ORDER BY 1
                """, ps -> ps.setInt(1, pid), rs -> {
            List<Lock> locks = new ArrayList<>();
            while (rs.next()) {
                locks.add(new Lock(rs.getString(1), rs.getString(2), rs.getBoolean(3)));
            }
            return locks;
        });
    }

    interface Binder {
        void bind(PreparedStatement ps) throws SQLException;
    }

    interface Reader<T> {
        T read(ResultSet rs) throws SQLException;
    }

    private static <T> T query(DataSource dataSource, String sql, Binder binder, Reader<T> reader) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            binder.bind(ps);
            try (ResultSet rs = ps.executeQuery()) {
                return reader.read(rs);
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
