package dev.coop;

import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import dev.coop.test.StepGate;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A cancellation answered {@code REQUESTED} wakes every run of its scope that waits on the happy path, whatever
 * transaction holds the run's lock when the cancellation wakes it. The run here waits for a child whose engine is
 * down, with a barrier timer an hour away: only the wake makes it give up, settle the child and roll back. Each test
 * lines the interleaving up with advisory locks the test holds, so it happens every time.
 */
class CancellationWakeTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);
    /** The advisory lock (first key) by which the test holds another transaction at the point it wants. */
    static final int HOLD = 0x77616b65;

    private static final CooperationStrategy ASK_AGAIN_IN_AN_HOUR = new CooperationStrategy() {
        @Override
        public BarrierDecision resumeHappyPath(Barrier barrier) {
            return BarrierDecision.waitUntil(barrier.run().now().plus(Duration.ofHours(1)));
        }
    };

    /** A root whose step {@code 0} (held at {@code gate} when given) launches a child of a saga no engine runs. */
    private static Saga<Empty> root(String name, StepGate gate) {
        Topic<Empty> child = Topic.of(name + "-child", Empty.class);
        Coop.engine(db.dataSource()).name("gone")
                .register(Saga.on(child, name + "-child").step("c0", step -> {
                }).build())
                .start().close();
        return Saga.on(Topic.of(name, Empty.class), name).strategy(ASK_AGAIN_IN_AN_HOUR)
                .step("0", step -> {
                    if (gate != null) {
                        gate.pass();
                    }
                    step.launch(child, new Empty());
                })
                .step("1", step -> {
                })
                .build();
    }

    /**
     * The CI failure of StrategyTest: a claim by saga of the root's engine read the root (runnable) before its step's
     * commit and locked it after, found it no longer due when it re-checked the row as locked, and left it; PostgreSQL
     * keeps that lock to the end of the claim's transaction. The cancellation's wake skipped the locked root
     * ({@code SKIP LOCKED}), so it waited for its hour. The claim is the engine's claim condition, held by the test
     * between its snapshot and its lock.
     */
    @Test
    void a_waiting_run_locked_by_a_claim_that_rejected_it_is_woken(DataSource dataSource) throws Exception {
        assertThat(cancelledWhileARejectingClaimHoldsTheRoot(dataSource, "wake-rejected",
                (client, id) -> client.cancel(id, "stop"))).isEqualTo(CancelResult.REQUESTED);
    }

    /**
     * The same interleaving, the root cancelled as part of a selection: a selection's batch wakes its runs as a single
     * cancel does.
     */
    @Test
    void a_selection_wakes_a_waiting_run_locked_by_a_claim_that_rejected_it(DataSource dataSource) throws Exception {
        assertThat(cancelledWhileARejectingClaimHoldsTheRoot(dataSource, "wake-selection",
                (client, id) -> client.cancel(dev.coop.inspect.RunQuery.newest().saga("wake-selection"), "olga",
                        "stop")))
                .isEqualTo(1L);
    }

    /**
     * Lines up the interleaving: a claim takes its snapshot while the root's step runs, locks the root after the
     * step's commit and rejects it (no longer due), keeping the lock; then {@code cancel} runs, and the claim commits
     * once the cancel finished or waits for the root's lock. Asserts the root rolls back; returns the cancel's answer.
     */
    private static Object cancelledWhileARejectingClaimHoldsTheRoot(DataSource dataSource, String name,
            java.util.function.BiFunction<CoopClient, MessageId, Object> cancel) throws Exception {
        StepGate gate = new StepGate();
        Saga<Empty> root = root(name, gate);
        try (CoopEngine engine = Coop.engine(dataSource).register(root).start();
                Connection holder = dataSource.getConnection();
                Connection claim = dataSource.getConnection()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(root.topic(), new Empty());
            gate.awaitArrivals(1, WAIT); // the step runs: the root is runnable, locked by its engine
            hold(holder);
            claim.setAutoCommit(false);
            CompletableFuture<Boolean> claimed = CompletableFuture.supplyAsync(() -> claimHeldAtItsLock(claim, id));
            Await.until("the claim to wait at the test's lock, its snapshot taken", WAIT,
                    () -> waitsFor(dataSource, "advisory"));
            gate.open();
            Await.until("the root to wait with its barrier timer set", WAIT,
                    () -> client.events(id).stream().anyMatch(e -> e.type() == EventType.SUSPENDED));
            holder.commit(); // the claim locks the root as committed, re-checks it, and leaves it (locked)
            assertThat(claimed.get()).as("the claim found the root").isFalse();

            CompletableFuture<Object> cancelled = CompletableFuture.supplyAsync(() -> cancel.apply(client, id));
            Await.until("the cancel to finish, or to wait for the root's lock", WAIT,
                    () -> cancelled.isDone() || waitsFor(dataSource, "transactionid"));
            claim.commit();
            Object answer = cancelled.get();
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            return answer;
        }
    }

    /**
     * The root's step advanced it to wait (its barrier timer) with a snapshot taken before the cancellation committed,
     * and committed after the cancellation's wake skipped the root it held locked. The advance that leaves a run
     * waiting on the happy path reads the cancellation under the operator lock ({@code commit_allowed}: the root
     * message's row since schema version 30, so the cancellation waits for the advance's transaction): the
     * cancellation waits for it and then wakes the root, or the advance sees the cancellation and gives up. The
     * advance is held by a trigger on its {@code SUSPENDED}, after its snapshot was taken.
     */
    @Test
    void a_run_whose_advance_to_waiting_raced_the_cancellation_is_woken(DataSource dataSource) throws Exception {
        Saga<Empty> root = root("wake-advance", null);
        try (Connection holder = dataSource.getConnection()) {
            holdSuspendedOf(dataSource, "wake-advance", true);
            try (CoopEngine engine = Coop.engine(dataSource).register(root).start()) {
                CoopClient client = engine.client();
                hold(holder);
                MessageId id = client.launch(root.topic(), new Empty());
                Await.until("the step's advance to wait at the test's lock", WAIT,
                        () -> waitsFor(dataSource, "advisory"));
                CompletableFuture<CancelResult> cancel = CompletableFuture.supplyAsync(
                        () -> client.cancel(id, "stop"));
                Await.until("the cancel to finish, or to wait for the advance", WAIT, // for the root message's row
                        () -> cancel.isDone() || waitsFor(dataSource, "transactionid")); // its lock (version 30)
                holder.commit();
                assertThat(cancel.get()).isEqualTo(CancelResult.REQUESTED);
                assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            }
        } finally {
            holdSuspendedOf(dataSource, "wake-advance", false);
        }
    }

    /** Takes the test's advisory lock in {@code c}'s transaction; others wait for it until that commits. */
    private static void hold(Connection c) throws SQLException {
        c.setAutoCommit(false);
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_advisory_xact_lock(?, 0)")) {
            ps.setInt(1, HOLD);
            ps.execute();
        }
    }

    /**
     * The claim by saga's condition on the run (runnable, due), its snapshot taken before the test's lock is free and
     * its row lock taken after; true when it claimed the run. The transaction stays open.
     */
    private static boolean claimHeldAtItsLock(Connection c, MessageId id) {
        try (PreparedStatement ps = c.prepareStatement("""
                SELECT r.id FROM coop.run r
                 WHERE r.message_id = ? AND r.status = 'RUNNABLE' AND r.runnable_at <= clock_timestamp()
                   AND pg_advisory_xact_lock_shared(?, 0) IS NOT NULL
                   FOR UPDATE SKIP LOCKED
                """)) {
            ps.setObject(1, id.value());
            ps.setInt(2, HOLD);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next();
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A trigger (or its removal) that holds the advance writing a SUSPENDED of {@code saga} at the test's lock. */
    private static void holdSuspendedOf(DataSource dataSource, String saga, boolean on) throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            if (!on) {
                st.execute("DROP TRIGGER IF EXISTS wake_test_hold ON coop.event");
                st.execute("DROP FUNCTION IF EXISTS coop.wake_test_hold()");
                return;
            }
            st.execute("""
                    CREATE FUNCTION coop.wake_test_hold() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN
                      IF NEW.type = 'SUSPENDED' AND NEW.saga = '%s' THEN
                        PERFORM pg_advisory_xact_lock_shared(%d, 0);
                      END IF;
                      RETURN NEW;
                    END $$""".formatted(saga, HOLD)); // test constants, not input
            st.execute("CREATE TRIGGER wake_test_hold BEFORE INSERT ON coop.event FOR EACH ROW"
                    + " EXECUTE FUNCTION coop.wake_test_hold()");
        }
    }

    private static boolean waitsFor(DataSource dataSource, String lockType) {
        return waitsFor(dataSource, lockType, 1);
    }

    /** Whether at least {@code n} backends wait for a lock of {@code lockType} (advisory, transactionid). */
    private static boolean waitsFor(DataSource dataSource, String lockType, int n) {
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = ?")) {
            ps.setString(1, lockType);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1) >= n;
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
