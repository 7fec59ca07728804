package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.internal.store.ClaimedRun;
import dev.coop.internal.store.SchemaName;
import dev.coop.internal.store.Store;
import dev.coop.internal.store.Time;
import dev.coop.test.CitusDatabase;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.postgresql.core.BaseConnection;
import org.postgresql.core.TransactionState;

/**
 * The claim by saga on Citus ({@code ShardedClaims}) leaves the claim's transaction, the one the step then runs in,
 * with a transaction open on the claimed run's worker alone: the candidates are read across shards in a transaction
 * of their own (docs/guide/citus.md, "The claim"), so the other worker has no backend in it. Also what a claim costs
 * in round trips, counted on the client: the candidates' read and the lock, and the SEEN with the message; one more
 * (the end of the lock attempts) when the claim's transaction already holds lock attempts that locked nothing.
 */
class CitusClaimTransactionTest {
    @RegisterExtension
    static final CitusDatabase db = new CitusDatabase(4);

    static final String SAGA = "claim-tx";
    static final String ENGINE = "claim-tx-engine";

    @Test
    void the_claims_transaction_is_open_on_the_claimed_runs_worker_alone() throws Exception {
        Topic<Empty> topic = Topic.of(SAGA, Empty.class);
        // registered, then closed: the launch below makes a run that only this test claims
        CitusHappyPathTest.engine(db.newDataSource(2)).name("registers").workers(1).register(Saga.on(topic, SAGA)
                .step("only", step -> {
                }).build()).start().close();
        MessageId id = Coop.client(db.dataSource()).launch(topic, new Empty());
        int worker = CitusFaults.workerOf(db.dataSource(), id.value());
        int other = db.cluster().ports().get(1) == worker ? db.cluster().ports().get(2) : db.cluster().ports().get(1);
        int version = CitusFaults.count(db.dataSource(), "SELECT max(version) FROM coop.saga_version WHERE saga = ?",
                SAGA);
        Store store = new Store(new SchemaName("coop").onCitus(), Time.DATABASE);
        try (Connection raw = db.dataSource().getConnection(); Connection holder = db.dataSource().getConnection()) {
            AtomicInteger trips = new AtomicInteger();
            Connection c = counting(raw, trips);
            c.setAutoCommit(false);
            String gpid = gpid(holder);
            // another transaction holds the run: the claim's lock attempt locks nothing, its transaction stays open
            holder.setAutoCommit(false);
            lockRun(holder, id.value());
            assertThat(store.claim(c, SAGA, version, ENGINE)).isNull();
            int missed = trips.getAndSet(0);
            assertThat(state(raw)).isEqualTo(TransactionState.OPEN);
            holder.rollback();

            ClaimedRun run = store.claim(c, SAGA, version, ENGINE); // after failed attempts: ends them
            int afterMiss = trips.getAndSet(0);
            assertThat(run).isNotNull();
            assertThat(run.rootId()).isEqualTo(id.value());
            String mine = gpid(raw);
            assertThat(inTransaction(worker, mine))
                    .as("backends of the claim's transaction (%s) on the run's worker: %s",
                            mine, activity(worker))
                    .isEqualTo(1);
            assertThat(inTransaction(other, mine)).as("backends of the claim's transaction on the other worker")
                    .isZero();
            raw.rollback();

            trips.set(0);
            ClaimedRun fresh = store.claim(c, SAGA, version, ENGINE); // no transaction open: the usual
            int claim = trips.get();
            assertThat(fresh).isNotNull();
            assertThat(inTransaction(other, gpid(raw))).isZero();
            raw.rollback();
            System.out.println("round trips: a claim " + claim + ", a claim after lock attempts " + afterMiss
                    + ", a claim that locked nothing " + missed);
            assertThat(claim).as("candidates, lock, SEEN and message").isEqualTo(3);
            assertThat(afterMiss).as("the end of the attempts, then a claim").isEqualTo(claim + 1);
            assertThat(missed).as("candidates, the shards' workers (read once, then every 10 s), lock").isEqualTo(3);
            assertThat(gpid).isNotEmpty();
        }
    }

    @Test
    void a_lock_attempt_that_failed_on_another_worker_leaves_no_backend_in_the_claims_transaction() throws Exception {
        String saga = "claim-tx-two";
        Topic<Empty> topic = Topic.of(saga, Empty.class);
        CitusHappyPathTest.engine(db.newDataSource(2)).name("registers-two").workers(1).register(Saga.on(topic, saga)
                .step("only", step -> {
                }).build()).start().close();
        CoopClient client = Coop.client(db.dataSource());
        int busy = db.cluster().ports().get(1);
        int free = db.cluster().ports().get(2);
        java.util.Map<Integer, List<UUID>> rootsOn = new java.util.HashMap<>(); // until each worker has one
        while (rootsOn.size() < 2) {
            UUID root = client.launch(topic, new Empty()).value();
            rootsOn.computeIfAbsent(CitusFaults.workerOf(db.dataSource(), root), w -> new ArrayList<>()).add(root);
        }
        int version = CitusFaults.count(db.dataSource(), "SELECT max(version) FROM coop.saga_version WHERE saga = ?",
                saga);
        Store store = new Store(new SchemaName("coop").onCitus(), Time.DATABASE);
        try (Connection c = db.dataSource().getConnection(); Connection holder = db.dataSource().getConnection()) {
            holder.setAutoCommit(false);
            for (UUID root : rootsOn.get(busy)) { // their lock attempts fail, on the busy worker
                lockRun(holder, root);
            }
            c.setAutoCommit(false);
            String mine = gpid(c);
            c.commit();
            for (int i = 0; i < 8; i++) { // the candidates are tried from a random one on: most claims try both
                ClaimedRun run = store.claim(c, saga, version, ENGINE);
                assertThat(run).isNotNull();
                assertThat(run.rootId()).isIn(rootsOn.get(free));
                assertThat(inTransaction(busy, mine)).as("backends of the claim's transaction on the busy worker: %s",
                        activity(busy)).isZero();
                c.rollback();
            }
            holder.rollback();
        }
    }

    /**
     * After a lock attempt that locked nothing, the claim tries the candidates on the same worker first, in the same
     * transaction: it ends the attempts (a {@code ROLLBACK} round trip) only when it moves to another worker. Every
     * run is held but one, so most claims fail on several candidates before they lock the free one.
     */
    @Test
    void failed_lock_attempts_on_one_worker_are_ended_only_when_the_claim_moves_to_another() throws Exception {
        String saga = "claim-tx-same";
        Topic<Empty> topic = Topic.of(saga, Empty.class);
        CitusHappyPathTest.engine(db.newDataSource(2)).name("registers-same").workers(1).register(Saga.on(topic, saga)
                .step("only", step -> {
                }).build()).start().close();
        CoopClient client = Coop.client(db.dataSource());
        java.util.Map<Integer, List<UUID>> rootsOn = new java.util.HashMap<>(); // until a worker has 4: 7 at most
        while (rootsOn.values().stream().noneMatch(r -> r.size() == 4)) {
            UUID root = client.launch(topic, new Empty()).value();
            rootsOn.computeIfAbsent(CitusFaults.workerOf(db.dataSource(), root), w -> new ArrayList<>()).add(root);
        }
        UUID free = rootsOn.values().stream().filter(r -> r.size() == 4).findFirst().orElseThrow().getFirst();
        int version = CitusFaults.count(db.dataSource(), "SELECT max(version) FROM coop.saga_version WHERE saga = ?",
                saga);
        Store store = new Store(new SchemaName("coop").onCitus(), Time.DATABASE);
        try (Connection raw = db.dataSource().getConnection(); Connection holder = db.dataSource().getConnection()) {
            holder.setAutoCommit(false);
            for (List<UUID> roots : rootsOn.values()) {
                for (UUID root : roots) {
                    if (!root.equals(free)) {
                        lockRun(holder, root);
                    }
                }
            }
            java.util.Map<String, AtomicInteger> sent = new java.util.HashMap<>();
            Connection c = recording(raw, sent);
            c.setAutoCommit(false);
            int failed = 0;
            for (int i = 0; i < 8; i++) {
                sent.clear();
                ClaimedRun run = store.claim(c, saga, version, ENGINE);
                assertThat(run).isNotNull();
                assertThat(run.rootId()).isEqualTo(free);
                int attempts = sent.getOrDefault("lock", new AtomicInteger()).get();
                int ended = sent.getOrDefault("ROLLBACK", new AtomicInteger()).get();
                failed += attempts - 1;
                assertThat(ended).as("attempts ended in a claim that failed %d times", attempts - 1)
                        .isLessThanOrEqualTo(Math.min(1, attempts - 1));
                raw.rollback();
            }
            System.out.println("failed lock attempts in 8 claims: " + failed);
            holder.rollback();
        }
    }

    /** The global process id of the connection's coordinator backend, as Citus names it to the workers. */
    private static String gpid(Connection c) throws SQLException {
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT citus_backend_gpid()")) {
            rs.next();
            return rs.getString(1);
        }
    }

    /**
     * The backends on the worker at {@code port} that serve coordinator backend {@code gpid} inside a transaction:
     * named by the gpid, or by the application name the claim's transaction sets (Citus passes it on).
     */
    private static int inTransaction(int port, String gpid) throws SQLException {
        try (Connection w = db.cluster().connect(port, db.databaseName()); PreparedStatement ps = w.prepareStatement("""
                SELECT count(*)::int FROM pg_stat_activity
                 WHERE application_name IN ('citus_internal gpid=' || ?, 'coop ' || ?)
                   AND state LIKE 'idle in transaction%'""")) {
            ps.setString(1, gpid);
            ps.setString(2, ENGINE);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    /** The worker's client backends: application name and state, for a failing assertion's message. */
    private static String activity(int port) throws SQLException {
        StringBuilder out = new StringBuilder();
        try (Connection w = db.cluster().connect(port, db.databaseName());
                Statement st = w.createStatement();
                ResultSet rs = st.executeQuery("SELECT application_name, state FROM pg_stat_activity"
                        + " WHERE backend_type = 'client backend'")) {
            while (rs.next()) {
                out.append(rs.getString(1)).append(" (").append(rs.getString(2)).append("); ");
            }
        }
        return out.toString();
    }

    private static void lockRun(Connection c, UUID root) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT id FROM coop.run WHERE root_id = ? FOR UPDATE")) {
            ps.setObject(1, root);
            ps.executeQuery().close();
        }
    }

    private static TransactionState state(Connection c) throws SQLException {
        return c.unwrap(BaseConnection.class).getTransactionState();
    }

    /**
     * {@code c}, counting the round trips made through it: each statement's execution (one round trip, also for
     * several statements in one text), and a commit, rollback or switch to auto-commit while a transaction is open
     * (the driver sends nothing when none is).
     */
    private static Connection counting(Connection c, AtomicInteger trips) {
        return (Connection) Proxy.newProxyInstance(CitusClaimTransactionTest.class.getClassLoader(),
                new Class<?>[]{Connection.class}, (proxy, m, args) -> {
                    String name = m.getName();
                    boolean open = state(c) != TransactionState.IDLE;
                    if (open && (name.equals("commit") || name.equals("rollback")
                            || name.equals("setAutoCommit") && Boolean.TRUE.equals(args[0]) && !c.getAutoCommit())) {
                        trips.incrementAndGet();
                    }
                    Object result = call(c, m, args);
                    if (result instanceof Statement st && (name.equals("prepareStatement")
                            || name.equals("createStatement"))) {
                        Class<?> type = st instanceof PreparedStatement ? PreparedStatement.class : Statement.class;
                        return Proxy.newProxyInstance(CitusClaimTransactionTest.class.getClassLoader(),
                                new Class<?>[]{type}, (p, sm, sargs) -> {
                                    if (sm.getName().startsWith("execute")) {
                                        trips.incrementAndGet();
                                    }
                                    return call(st, sm, sargs);
                                });
                    }
                    return result;
                });
    }

    /**
     * {@code c}, counting the executions of the claim's lock attempts ({@code "lock"}) and of statements that end a
     * transaction with {@code ROLLBACK} ({@code "ROLLBACK"}).
     */
    private static Connection recording(Connection c, java.util.Map<String, AtomicInteger> sent) {
        return (Connection) Proxy.newProxyInstance(CitusClaimTransactionTest.class.getClassLoader(),
                new Class<?>[]{Connection.class}, (proxy, m, args) -> {
                    Object result = call(c, m, args);
                    if (result instanceof PreparedStatement ps && m.getName().equals("prepareStatement")) {
                        String sql = (String) args[0];
                        String kind = sql.contains("lock_run_shard")
                                ? "lock"
                                : sql.contains("ROLLBACK")
                                        ? "ROLLBACK"
                                        : null;
                        return Proxy.newProxyInstance(CitusClaimTransactionTest.class.getClassLoader(),
                                new Class<?>[]{PreparedStatement.class}, (p, sm, sargs) -> {
                                    if (kind != null && sm.getName().startsWith("execute")) {
                                        sent.computeIfAbsent(kind, k -> new AtomicInteger()).incrementAndGet();
                                    }
                                    return call(ps, sm, sargs);
                                });
                    }
                    return result;
                });
    }

    private static Object call(Object target, Method m, Object[] args) throws Throwable {
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
