package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.coop.Payloads.Empty;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.test.CoopDatabase;
import dev.coop.test.Invariants;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What keeps a continuing run with its worker, and what spares a waiting client the database: a run whose worker
 * continues it at once is reserved for that worker between its commit and its reclaim (other workers' claims leave it
 * alone, and the reservation lapses when its worker died), and a client of an engine learns the outcome of a message
 * it launched from the engine when the message's runs finish there.
 */
class ContinuationTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);

    @Test
    void a_continuing_run_is_reserved_for_its_worker_until_its_next_step_moves_it_on(DataSource dataSource)
            throws SQLException {
        Topic<Empty> topic = Topic.of("reserve-continue", Empty.class);
        Map<String, OffsetDateTime> seen = new ConcurrentHashMap<>();
        Saga<Empty> saga = Saga.on(topic, "reserve-continue-saga")
                .step("first", step -> seen.put("first", reservedUntil(step)))
                .step("second", step -> seen.put("second", reservedUntil(step)))
                .step("third", step -> seen.put("third", reservedUntil(step)))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).name("reserve-continue").workers(2).register(saga)
                .start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(seen).containsOnlyKeys("first", "second", "third");
            // the first step was claimed by saga: nothing reserved it; the others were reclaimed by the commit of
            // the step before, which reserved the run until a moment later
            assertThat(seen.get("first")).isEqualTo(OffsetDateTime.MIN);
            assertThat(seen.get("second")).isNotEqualTo(OffsetDateTime.MIN);
            assertThat(seen.get("third")).isNotEqualTo(OffsetDateTime.MIN);
            assertThat(reservedRuns(dataSource)).as("runs still reserved once everything finished").isZero();
            Invariants.assertAll(engine.client().events(id));
        }
    }

    /**
     * A worker that died between the commit of a step and the reclaim of the next (kill -9 at that moment) leaves
     * its run reserved: the run is claimed as usual once the reservation lapsed, not lost, and not earlier.
     */
    @Test
    void a_run_reserved_for_a_worker_that_died_is_claimed_once_the_reservation_lapsed(DataSource dataSource)
            throws SQLException {
        Topic<Empty> topic = Topic.of("reserve-lapse", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "reserve-lapse-saga")
                .step("first", step -> {
                })
                .step("second", step -> {
                })
                .build();
        try (CoopEngine registering = Coop.engine(dataSource).name("reserve-lapse-0").register(saga).start()) {
            // registers the saga, so that the launch below creates its run
        }
        MessageId id = Coop.client(dataSource).launch(topic, new Empty());
        OffsetDateTime reservedUntil;
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement("""
                UPDATE coop.run SET reserved_until = clock_timestamp() + interval '700 milliseconds'
                 WHERE message_id = ? RETURNING reserved_until
                """)) {
            ps.setObject(1, id.value());
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).isTrue();
                reservedUntil = rs.getObject(1, OffsetDateTime.class);
            }
        }
        try (CoopEngine engine = Coop.engine(dataSource).name("reserve-lapse-1").workers(2)
                .pollInterval(Duration.ofMillis(50)).register(saga).start()) {
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            List<Event> events = engine.client().events(id);
            Invariants.assertAll(events);
            Event seenEvent = events.stream().filter(e -> e.type() == EventType.SEEN).findFirst().orElseThrow();
            assertThat(seenEvent.createdAt()).as("claimed when the reservation lapsed, not before")
                    .isAfterOrEqualTo(reservedUntil);
            assertThat(reservedRuns(dataSource)).isZero();
        }
    }

    /**
     * Another transaction takes the run's lock the moment the step before commits (here a session that queued for it
     * while the step ran; in production a claim that read the run before that commit and skipped it after locking
     * it): the continuing worker's reclaim waits for that lock, gives up after its 200 ms, lets go of the run, and
     * the run is claimed once the other transaction ended and the reservation lapsed. Which of the two gets the lock
     * first is up to PostgreSQL; either way nothing runs twice, nothing is lost, nothing is left reserved.
     */
    @Test
    void a_continuation_whose_run_another_transaction_holds_waits_then_lets_go(DataSource dataSource)
            throws Exception {
        Topic<Empty> topic = Topic.of("reserve-held", Empty.class);
        dev.coop.test.StepGate gate = new dev.coop.test.StepGate();
        dev.coop.test.StepRecorder recorder = new dev.coop.test.StepRecorder();
        Saga<Empty> saga = Saga.on(topic, "reserve-held-saga")
                .step("first", step -> {
                    recorder.record(step);
                    gate.pass();
                })
                .step("second", recorder::record)
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).name("reserve-held").workers(2)
                .pollInterval(Duration.ofMillis(100)).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            gate.awaitArrivals(1, WAIT);
            try (Connection holder = dataSource.getConnection()) {
                holder.setAutoCommit(false);
                int holderPid = pid(holder);
                java.util.concurrent.CompletableFuture<Void> locked = java.util.concurrent.CompletableFuture.runAsync(
                        () -> lockRun(holder, id));
                dev.coop.test.Await.until("the holder queued for the run's lock", WAIT,
                        () -> waitsForLock(dataSource, holderPid));
                gate.open(); // the first step commits, and the holder, first in the lock's queue, takes the run
                locked.get(WAIT.toSeconds(), java.util.concurrent.TimeUnit.SECONDS);
                // the worker's reclaim found the run held and waits for it, then gives up (lock_timeout); until no
                // session waits for a lock any more, the holder keeps it (had the reclaim been first, the holder
                // waited for the second step instead, and nothing waits now)
                dev.coop.test.Await.until("no session waiting for the run", WAIT, () -> lockWaiters(dataSource) == 0);
                holder.commit();
            }
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            recorder.assertEachStepRanOnce();
            assertThat(recorder.total()).isEqualTo(2);
            assertThat(reservedRuns(dataSource)).isZero();
            Invariants.assertAll(engine.client().events(id));
        }
    }

    private static void lockRun(Connection c, MessageId id) {
        try (PreparedStatement ps = c.prepareStatement("SELECT 1 FROM coop.run WHERE message_id = ? FOR UPDATE")) {
            ps.setObject(1, id.value());
            ps.executeQuery().close();
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private static int pid(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_backend_pid()"); ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getInt(1);
        }
    }

    private static boolean waitsForLock(DataSource dataSource, int pid) {
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "SELECT count(*) FROM pg_stat_activity WHERE pid = ? AND wait_event_type = 'Lock'")) {
            ps.setInt(1, pid);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1) == 1;
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private static int lockWaiters(DataSource dataSource) {
        return count(dataSource,
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()");
    }

    private static int count(DataSource dataSource, String sql) {
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement(sql);
                ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getInt(1);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void a_client_learns_the_outcome_of_what_it_launched_from_its_engine_without_reading_the_database(
            DataSource dataSource) {
        Topic<Empty> topic = Topic.of("outcome-here", Empty.class);
        Topic<Empty> failing = Topic.of("outcome-here-failing", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "outcome-here-saga")
                .step("first", step -> {
                })
                .step("second", step -> {
                })
                .build();
        Saga<Empty> failingSaga = Saga.on(failing, "outcome-here-failing-saga")
                .step("first", step -> {
                })
                .compensateWith((step, cause) -> {
                })
                .step("second", step -> {
                    throw new IllegalStateException("no");
                })
                .build();
        Thread test = Thread.currentThread();
        java.util.concurrent.atomic.AtomicBoolean away = new java.util.concurrent.atomic.AtomicBoolean();
        DataSource counting = new AwayFor(dataSource, test, away);
        try (CoopEngine engine = Coop.engine(counting).name("outcome-here").workers(2).register(saga, failingSaga)
                .start()) {
            CoopClient client = engine.client();
            for (int i = 0; i < 20; i++) {
                MessageId id = client.launch(topic, new Empty());
                // the database is away for this thread while it waits: the outcome can only come from the engine
                // (a slow run still makes the wait try its backstop read, which fails and is retried)
                away.set(true);
                try {
                    assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
                } finally {
                    away.set(false);
                }
            }
            // a rollback learnt here too (the wait may read the database meanwhile: the backstop for runs that take
            // longer than its first pause, in case they finish elsewhere)
            MessageId id = client.launch(failing, new Empty());
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(client.awaitCompletion(id, WAIT)).as("asked again: from the database")
                    .isEqualTo(Outcome.ROLLED_BACK);
        }
    }

    /** A message with a run here and one in another engine: the outcome waits for both (read from the database). */
    @Test
    void a_message_with_runs_in_another_engine_waits_for_them_too(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("outcome-split", Empty.class);
        Saga<Empty> here = Saga.on(topic, "outcome-split-here")
                .step("only", step -> {
                })
                .build();
        Saga<Empty> there = Saga.on(topic, "outcome-split-there")
                .step("only", step -> {
                })
                .sleep("pause", Duration.ofMillis(200))
                .step("after", step -> {
                })
                .build();
        HikariDataSource otherPool = db.newDataSource(3);
        try (CoopEngine other = Coop.engine(otherPool).name("outcome-split-there").workers(1).register(there).start();
                CoopEngine engine = Coop.engine(dataSource).name("outcome-split-here").register(here).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(engine.client().statuses(id)).containsOnly(RunStatus.COMMITTED).hasSize(2);
        } finally {
            otherPool.close();
        }
    }

    /**
     * A run's updates that change no indexed column are HOT (no index entries), the first one included: the lineage
     * written by the launch is stored as every later update writes it (an array appended to with {@code || id} was
     * stored with another header, so the first advance of every run rewrote all of its indexes).
     */
    @Test
    void a_continuing_runs_updates_write_no_index_entries(DataSource dataSource) throws SQLException {
        Topic<Empty> topic = Topic.of("hot-updates", Empty.class);
        Saga<Empty> saga = threeEmptySteps(topic, "hot-updates-saga");
        long[] before = runUpdates(dataSource);
        HikariDataSource pool = db.newDataSource(4);
        try (CoopEngine engine = Coop.engine(pool).schema("hot_updates").name("hot-updates").workers(1)
                .register(saga).start()) {
            commitEach(engine, topic, 5);
        } finally {
            pool.close(); // its sessions end, and report their statistics
        }
        // 3 updates per run: two advances that keep it runnable (HOT), the last that finishes it (status changes)
        long[] after = dev.coop.test.Await.value("the updates' statistics", WAIT, () -> {
            long[] now = runUpdates(dataSource);
            return now[0] - before[0] >= 15 ? now : null;
        });
        assertThat(after[0] - before[0]).as("updates of run").isEqualTo(15);
        assertThat(after[1] - before[1]).as("of them HOT").isEqualTo(10);
    }

    /**
     * An advance that keeps its run runnable now sets neither the run's status nor its due time, so that PostgreSQL
     * does not even consider the run's update triggers for it (it would compile their {@code WHEN} for the statement,
     * only to find it false): a trigger on either column fires once per run of a three-step saga, for the advance
     * that finishes it.
     */
    @Test
    void a_continuing_advance_leaves_the_runs_status_and_due_time_alone(DataSource dataSource) throws SQLException {
        Topic<Empty> topic = Topic.of("quiet-advance", Empty.class);
        Saga<Empty> saga = threeEmptySteps(topic, "quiet-advance-saga");
        try (CoopEngine engine = Coop.engine(dataSource).schema("quiet_advance").name("quiet-advance").workers(1)
                .register(saga).start()) {
            try (Connection c = dataSource.getConnection(); java.sql.Statement st = c.createStatement()) {
                st.execute("CREATE TABLE quiet_advance.fired (run_id uuid, status text)");
                st.execute("""
                        CREATE FUNCTION quiet_advance.count_update() RETURNS trigger LANGUAGE plpgsql AS $$
                        BEGIN
                          INSERT INTO quiet_advance.fired VALUES (NEW.id, NEW.status);
                          RETURN NULL;
                        END $$""");
                st.execute("CREATE TRIGGER count_update AFTER UPDATE OF status, runnable_at ON quiet_advance.run"
                        + " FOR EACH ROW EXECUTE FUNCTION quiet_advance.count_update()");
            }
            commitEach(engine, topic, 5);
        }
        assertThat(count(dataSource, "SELECT count(*) FROM quiet_advance.fired")).as("updates of status or due time")
                .isEqualTo(5);
        assertThat(count(dataSource, "SELECT count(DISTINCT run_id) FROM quiet_advance.fired"
                + " WHERE status = 'COMMITTED'")).as("each the run's last").isEqualTo(5);
    }

    /**
     * The last transaction of a run with no parent to count off commits in the round trip of its advance when its
     * message is no pending join member: the advance, a savepoint, the check of the memberships and COMMIT are one
     * prepared statement, and no separate lookup of memberships is sent. (A member's fallback, when the check stops
     * the COMMIT, is JoinTest's.)
     */
    @Test
    void a_finishing_run_in_no_join_commits_in_the_round_trip_of_its_advance(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("finish-one-trip", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "finish-one-trip-saga")
                .step("first", step -> {
                })
                .step("second", step -> {
                })
                .build();
        List<String> sent = new java.util.concurrent.CopyOnWriteArrayList<>();
        try (CoopEngine engine = Coop.engine(RecordingDataSource.of(dataSource, sent)).name("finish-one-trip")
                .workers(1)
                .register(saga).start()) {
            commitEach(engine, topic, 3);
        }
        assertThat(sent).filteredOn(sql -> sql.contains("assert_no_pending_members")).hasSize(3)
                .allMatch(sql -> sql.contains("SAVEPOINT") && sql.strip().endsWith("COMMIT"));
        assertThat(sent).noneMatch(sql -> sql.contains("join_pending_members"));
    }

    /**
     * The last transaction of a run that counts itself off at its parent (one run per transaction) sends the check of
     * the memberships and COMMIT in one round trip after its advance, also when the count-off committed the parent:
     * no separate lookup of memberships, no COMMIT of its own. (A member's fallback is JoinTest's.)
     */
    @Test
    void a_finishing_child_sends_its_join_check_with_the_commit(DataSource dataSource) {
        Topic<Empty> parentTopic = Topic.of("child-check-parent", Empty.class);
        Topic<Empty> childTopic = Topic.of("child-check-child", Empty.class);
        Saga<Empty> parent = Saga.on(parentTopic, "child-check-parent-saga")
                .step("launch", step -> step.launch(childTopic, new Empty()))
                .build();
        Saga<Empty> child = Saga.on(childTopic, "child-check-child-saga").step("only", step -> {
        }).build();
        List<String> sent = new java.util.concurrent.CopyOnWriteArrayList<>();
        try (CoopEngine engine = Coop.engine(RecordingDataSource.of(dataSource, sent)).name("child-check").workers(1)
                .maxRunsPerTransaction(1).register(parent, child).start()) {
            commitEach(engine, parentTopic, 3);
        }
        assertThat(sent).filteredOn(sql -> sql.contains("assert_no_pending_members")).as("the children's").hasSize(3)
                .allMatch(sql -> sql.strip().startsWith("SAVEPOINT") && sql.strip().endsWith("COMMIT"));
        assertThat(sent).noneMatch(sql -> sql.contains("join_pending_members"));
    }

    /** A saga of three steps that do nothing. */
    private static Saga<Empty> threeEmptySteps(Topic<Empty> topic, String name) {
        return Saga.on(topic, name)
                .step("first", step -> {
                })
                .step("second", step -> {
                })
                .step("third", step -> {
                })
                .build();
    }

    /** Launches {@code n} messages one after the other, each awaited to its commit. */
    private static void commitEach(CoopEngine engine, Topic<Empty> topic, int n) {
        for (int i = 0; i < n; i++) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
        }
    }

    /** Updates of {@code hot_updates.run} and how many of them were HOT, as the statistics say now. */
    private static long[] runUpdates(DataSource dataSource) {
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables"
                                + " WHERE schemaname = 'hot_updates' AND relname = 'run'");
                ResultSet rs = ps.executeQuery()) {
            return rs.next() ? new long[]{rs.getLong(1), rs.getLong(2)} : new long[]{0, 0};
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The run's reservation as its step sees it (MIN: none). */
    private static OffsetDateTime reservedUntil(StepContext<Empty> step) {
        try (PreparedStatement ps = step.connection().prepareStatement(
                "SELECT reserved_until FROM coop.run WHERE id = ?")) {
            ps.setObject(1, step.runId());
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                OffsetDateTime t = rs.getObject(1, OffsetDateTime.class);
                return t == null ? OffsetDateTime.MIN : t;
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private static int reservedRuns(DataSource dataSource) {
        return count(dataSource, "SELECT count(*) FROM coop.run WHERE reserved_until IS NOT NULL");
    }

    /**
     * A continuation's reclaim reads the run's row alone (its message, lineage and step instances are what the
     * worker's previous claim read, plus the instance it just wrote): measured inside each step on its own transaction,
     * where the reclaim ran, by PostgreSQL's scan counts. The loop sees every iteration, the payload and the compensations,
     * also when it is cancelled.
     */
    @Test
    void a_continuations_reclaim_reads_only_the_run_row(DataSource dataSource) {
        String suffix = "-slim";
        Topic<String> topic = Topic.of("continue-slim" + suffix, String.class);
        List<String> trace = new java.util.concurrent.CopyOnWriteArrayList<>();
        List<Integer> compensated = new java.util.concurrent.CopyOnWriteArrayList<>();
        Map<Integer, Long> scans = new ConcurrentHashMap<>();
        AtomicInteger cancelAt = new AtomicInteger(Integer.MAX_VALUE);
        java.util.concurrent.atomic.AtomicReference<CoopClient> clientRef = new java.util.concurrent.atomic.AtomicReference<>();
        Saga<String> saga = Saga.on(topic, "continue-slim-saga" + suffix)
                .flowStep("loop", step -> {
                    scans.put(step.iteration(), scansOfMessageAndSteps(step));
                    trace.add(step.iteration() + ":" + step.payload());
                    if (step.iteration() == cancelAt.get()) { // committed now, on another connection
                        assertThat(clientRef.get().cancel(step.messageId(), "enough"))
                                .isEqualTo(dev.coop.CancelResult.REQUESTED);
                    }
                    return step.iteration() < 12 ? Flow.repeat() : Flow.next();
                })
                .compensateWith((step, cause) -> compensated.add(step.iteration()))
                .step("after", step -> trace.add("after"))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).name("continue" + suffix).workers(1).register(saga)
                .start()) {
            CoopClient client = engine.client();
            clientRef.set(client);
            MessageId id = client.launch(topic, "p" + suffix);
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            List<String> expected = new java.util.ArrayList<>();
            for (int i = 1; i <= 12; i++) {
                expected.add(i + ":p" + suffix);
            }
            expected.add("after");
            assertThat(trace).as(suffix).isEqualTo(expected);
            // the counts are the backend's pending statistics: they add up until it is idle outside a
            // transaction, which a continuing worker's connection never is between two steps
            assertThat(scans.get(1)).as("the first claim reads the message and the step instances").isPositive();
            for (int i = 2; i <= 12; i++) {
                long added = scans.get(i) - scans.get(i - 1);
                assertThat(added).as("slim reclaim, iteration %d", i).isZero();
            }
            Invariants.assertRunsWellFormed(client.events(id));

            // cancelled by the step of iteration 4 (committed on another connection): that step's advance sees it
            // and rolls back, so the iterations that committed are compensated
            trace.clear();
            cancelAt.set(4);
            MessageId cancelled = client.launch(topic, "c" + suffix);
            assertThat(client.awaitCompletion(cancelled, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(trace).as(suffix).containsExactly("1:c" + suffix, "2:c" + suffix, "3:c" + suffix,
                    "4:c" + suffix);
            assertThat(compensated).as(suffix).containsExactly(3, 2, 1);
            Invariants.assertRunsWellFormed(client.events(cancelled));
        }
    }

    /** A payload that counts how often it is read (Jackson calls a record's canonical constructor). */
    record CountedReads(String value) {
        static final AtomicInteger READS = new AtomicInteger();

        CountedReads {
            READS.incrementAndGet();
        }
    }

    /**
     * A continuation's step reads the payload when it asks for it: the first step of a claim reads it before it runs
     * (a payload that cannot be read fails that step, as before), a continuing step that never asks costs nothing, and
     * one that asks gets its own copy.
     */
    @Test
    void a_continuing_step_reads_the_payload_only_when_it_asks(DataSource dataSource) {
        Topic<CountedReads> topic = Topic.of("continue-payload", CountedReads.class);
        List<String> seen = new java.util.concurrent.CopyOnWriteArrayList<>();
        Saga<CountedReads> saga = Saga.on(topic, "continue-payload-saga")
                .step("a", step -> {
                })
                .step("b", step -> {
                })
                .step("c", step -> {
                    CountedReads first = step.payload();
                    seen.add(first.value());
                    assertThat(step.payload()).as("read once per step").isSameAs(first);
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).name("continue-payload").workers(1).register(saga).start()) {
            CountedReads payload = new CountedReads("p");
            int before = CountedReads.READS.get();
            MessageId id = engine.client().launch(topic, payload);
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(seen).containsExactly("p");
            assertThat(CountedReads.READS.get() - before)
                    .as("reads: before the first step, and when step c asked").isEqualTo(2);
        }
    }

    /** Scans of {@code message}, {@code event} (the step log) and their indexes by this transaction so far. */
    private static long scansOfMessageAndSteps(StepContext<?> step) {
        try (PreparedStatement ps = step.connection().prepareStatement("""
                SELECT sum(pg_stat_get_xact_numscans(i.indexrelid) + pg_stat_get_xact_numscans(i.indrelid))::bigint
                  FROM pg_index i WHERE i.indrelid IN ('coop.message'::regclass, 'coop.event'::regclass)
                """);
                ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** While {@code away}, refuses connections to one thread. */
    private record AwayFor(DataSource delegate, Thread thread, java.util.concurrent.atomic.AtomicBoolean away)
            implements
                DataSource {
        @Override
        public Connection getConnection() throws SQLException {
            borrowing();
            return delegate.getConnection();
        }

        @Override
        public Connection getConnection(String user, String password) throws SQLException {
            borrowing();
            return delegate.getConnection(user, password);
        }

        private void borrowing() throws SQLException {
            if (Thread.currentThread() == thread && away.get()) {
                throw new SQLException("the database is away for the waiting thread (test)", "08001");
            }
        }

        @Override
        public PrintWriter getLogWriter() throws SQLException {
            return delegate.getLogWriter();
        }

        @Override
        public void setLogWriter(PrintWriter out) throws SQLException {
            delegate.setLogWriter(out);
        }

        @Override
        public void setLoginTimeout(int seconds) throws SQLException {
            delegate.setLoginTimeout(seconds);
        }

        @Override
        public int getLoginTimeout() throws SQLException {
            return delegate.getLoginTimeout();
        }

        @Override
        public Logger getParentLogger() throws SQLFeatureNotSupportedException {
            return delegate.getParentLogger();
        }

        @Override
        public <T> T unwrap(Class<T> iface) throws SQLException {
            return delegate.unwrap(iface);
        }

        @Override
        public boolean isWrapperFor(Class<?> iface) throws SQLException {
            return delegate.isWrapperFor(iface);
        }
    }
}
