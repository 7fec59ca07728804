package dev.coop.bench;

import java.io.PrintWriter;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * Counts and times, on the client side, every JDBC round trip made through a data source: each statement execution
 * (by statement kind, split by role: engine threads are named {@code coop-...}, everything else is a client), each
 * commit and rollback, and the rows each query returned. Used for the statement and round-trip profile, the claim
 * latency of the history workload and the idle workload; the plain throughput runs use the pool directly.
 */
final class SqlStats {
    /** One kind of round trip, for one role. */
    static final class Kind {
        final String role;
        final String label;
        volatile String sql;
        final LongAdder calls = new LongAdder();
        final LongAdder nanos = new LongAdder();
        final LongAdder rows = new LongAdder();
        final LongAdder empty = new LongAdder();
        private long[] samples = new long[4096];
        private int n;

        Kind(String role, String label) {
            this.role = role;
            this.label = label;
        }

        synchronized void sample(long ns) {
            if (n == samples.length) {
                if (n >= 4_000_000) {
                    return;
                }
                samples = Arrays.copyOf(samples, n * 2);
            }
            samples[n++] = ns;
        }

        synchronized long[] samples() {
            return Arrays.copyOf(samples, n);
        }
    }

    /** Told about each timed round trip; used to time one particular step's statements. */
    interface Listener {
        void executed(String label, long startNanos, long endNanos);
    }

    private final ConcurrentHashMap<String, Kind> kinds = new ConcurrentHashMap<>();
    volatile Listener listener;

    Kind kind(String role, String label) {
        return kinds.computeIfAbsent(role + "|" + label, k -> new Kind(role, label));
    }

    void reset() {
        kinds.clear();
    }

    private static boolean inTransaction(Connection c) {
        try {
            return c.getAutoCommit()
                    ? false
                    : c.unwrap(org.postgresql.core.BaseConnection.class)
                            .getTransactionState() != org.postgresql.core.TransactionState.IDLE;
        } catch (SQLException e) {
            return true;
        }
    }

    /** The kind of a statement: a name for the engine's known statements, else its first words. */
    static String label(String sql) {
        String s = sql.replaceAll("\\s+", " ").strip();
        if (s.startsWith("WITH events AS") && s.contains("; COMMIT")) { // one round trip for several statements
            return s.contains("WITH claimed AS") ? "advance+COMMIT+reclaim" : "advance+COMMIT";
        }
        if (s.startsWith("WITH events AS") && s.contains("join_pending_members")) {
            return "advance+joinLookup";
        }
        if (s.contains("WITH claimed AS")) {
            if (s.contains("r.saga = ?")) {
                return "claim";
            }
            return s.contains("steps_done = ?") ? "reclaimUnchanged" : "reclaim";
        }
        if (s.startsWith("WITH input AS")) {
            return "emit";
        }
        if (s.startsWith("WITH events AS")) {
            return "advance";
        }
        if (s.contains("runnable_at = clock_timestamp() + ?")) {
            return "postpone";
        }
        if (s.startsWith("SELECT s.saga, floor")) {
            return "probe";
        }
        if (s.startsWith("SELECT status FROM")) {
            return "runStatuses";
        }
        if (s.startsWith("SELECT 1 FROM") && s.contains(".message WHERE id")) {
            return "messageExists";
        }
        if (s.startsWith("LISTEN")) {
            return "listen";
        }
        return s.length() > 60 ? s.substring(0, 60) + "..." : s;
    }

    static String role() {
        return Thread.currentThread().getName().startsWith("coop-") ? "engine" : "client";
    }

    private void record(String label, String sql, long start, long end, int rows, boolean query) {
        Kind k = kind(role(), label);
        if (k.sql == null && sql != null) {
            k.sql = sql;
        }
        k.calls.increment();
        k.nanos.add(end - start);
        k.sample(end - start);
        if (query) {
            k.rows.add(rows);
        }
        Listener l = listener;
        if (l != null) {
            l.executed(label, start, end);
        }
    }

    /** The first SQL text seen for a statement kind (any role), or null. */
    String sqlOf(String label) {
        for (Kind k : kinds.values()) {
            if (k.label.equals(label) && k.sql != null) {
                return k.sql;
            }
        }
        return null;
    }

    long[] samples(String role, String label) {
        Kind k = kinds.get(role + "|" + label);
        return k == null ? new long[0] : k.samples();
    }

    long calls(String role, String label) {
        Kind k = kinds.get(role + "|" + label);
        return k == null ? 0 : k.calls.sum();
    }

    /** Every kind: calls, rows, calls that returned no row, mean and p50/p99 time, per unit of work. */
    List<Map<String, Object>> table(double perUnit) {
        List<Kind> list = new ArrayList<>(kinds.values());
        list.sort(Comparator.comparing((Kind k) -> k.role).thenComparing(k -> -k.calls.sum()));
        List<Map<String, Object>> out = new ArrayList<>();
        for (Kind k : list) {
            Map<String, Object> m = new LinkedHashMap<>();
            long calls = k.calls.sum();
            long[] s = k.samples();
            Arrays.sort(s);
            m.put("role", k.role);
            m.put("kind", k.label);
            m.put("calls", calls);
            m.put("perUnit", Stats.round(calls / perUnit, 3));
            m.put("rows", k.rows.sum());
            m.put("emptyResults", k.empty.sum());
            m.put("meanMs", Stats.round(calls == 0 ? 0 : k.nanos.sum() / 1e6 / calls, 3));
            m.put("p50Ms", Stats.ms(Stats.percentile(s, 50)));
            m.put("p99Ms", Stats.ms(Stats.percentile(s, 99)));
            out.add(m);
        }
        return out;
    }

    /** Sum of calls over kinds matching role (null: any); commits and rollbacks are kinds too. */
    long total(String role, boolean roundTripsOnly) {
        long n = 0;
        for (Kind k : kinds.values()) {
            if ((role == null || k.role.equals(role))
                    && (roundTripsOnly || !(k.label.equals("COMMIT") || k.label.equals("ROLLBACK")))) {
                n += k.calls.sum();
            }
        }
        return n;
    }

    DataSource wrap(DataSource target) {
        return new CountingDataSource(target);
    }

    private final class CountingDataSource implements DataSource {
        private final DataSource target;

        CountingDataSource(DataSource target) {
            this.target = target;
        }

        @Override
        public Connection getConnection() throws SQLException {
            return connection(target.getConnection());
        }

        @Override
        public Connection getConnection(String username, String password) throws SQLException {
            return connection(target.getConnection(username, password));
        }

        @Override
        public PrintWriter getLogWriter() throws SQLException {
            return target.getLogWriter();
        }

        @Override
        public void setLogWriter(PrintWriter out) throws SQLException {
            target.setLogWriter(out);
        }

        @Override
        public void setLoginTimeout(int seconds) throws SQLException {
            target.setLoginTimeout(seconds);
        }

        @Override
        public int getLoginTimeout() throws SQLException {
            return target.getLoginTimeout();
        }

        @Override
        public Logger getParentLogger() throws SQLFeatureNotSupportedException {
            return target.getParentLogger();
        }

        @Override
        public <T> T unwrap(Class<T> iface) throws SQLException {
            return iface.isInstance(this) ? iface.cast(this) : target.unwrap(iface);
        }

        @Override
        public boolean isWrapperFor(Class<?> iface) throws SQLException {
            return iface.isInstance(this) || target.isWrapperFor(iface);
        }
    }

    private Connection connection(Connection target) {
        return (Connection) Proxy.newProxyInstance(SqlStats.class.getClassLoader(), new Class<?>[]{Connection.class},
                new ConnectionHandler(target));
    }

    private static Object call(Object target, Method m, Object[] args) throws Throwable {
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    private final class ConnectionHandler implements InvocationHandler {
        private final Connection target;

        ConnectionHandler(Connection target) {
            this.target = target;
        }

        @Override
        public Object invoke(Object proxy, Method m, Object[] args) throws Throwable {
            String name = m.getName();
            switch (name) {
                case "prepareStatement" -> {
                    Object ps = call(target, m, args);
                    return Proxy.newProxyInstance(SqlStats.class.getClassLoader(),
                            new Class<?>[]{PreparedStatement.class},
                            new StatementHandler(ps, (String) args[0]));
                }
                case "createStatement" -> {
                    Object st = call(target, m, args);
                    return Proxy.newProxyInstance(SqlStats.class.getClassLoader(), new Class<?>[]{Statement.class},
                            new StatementHandler(st, null));
                }
                case "commit", "rollback" -> {
                    if (!inTransaction((Connection) target)) {
                        return call(target, m, args); // the driver sends nothing: not a round trip
                    }
                    long start = System.nanoTime();
                    Object r = call(target, m, args);
                    record(name.toUpperCase(java.util.Locale.ROOT), null, start, System.nanoTime(), 0, false);
                    return r;
                }
                case "unwrap" -> {
                    Class<?> iface = (Class<?>) args[0];
                    return iface.isInstance(proxy) ? proxy : call(target, m, args);
                }
                case "isWrapperFor" -> {
                    Class<?> iface = (Class<?>) args[0];
                    return iface.isInstance(proxy) || (Boolean) call(target, m, args);
                }
                case "equals" -> {
                    return proxy == args[0];
                }
                case "hashCode" -> {
                    return System.identityHashCode(proxy);
                }
                default -> {
                    return call(target, m, args);
                }
            }
        }
    }

    private final class StatementHandler implements InvocationHandler {
        private final Object target;
        private final String sql;

        StatementHandler(Object target, String sql) {
            this.target = target;
            this.sql = sql;
        }

        @Override
        public Object invoke(Object proxy, Method m, Object[] args) throws Throwable {
            String name = m.getName();
            if (name.startsWith("execute")) {
                String text = args != null && args.length > 0 && args[0] instanceof String s ? s : sql;
                String label = text == null ? "?" : label(text);
                long start = System.nanoTime();
                Object r = call(target, m, args);
                long end = System.nanoTime();
                if (r instanceof ResultSet rs) {
                    Kind k = kind(role(), label);
                    record(label, text, start, end, 0, true);
                    return Proxy.newProxyInstance(SqlStats.class.getClassLoader(), new Class<?>[]{ResultSet.class},
                            new ResultSetHandler(rs, k));
                }
                record(label, text, start, end, 0, false);
                return r;
            }
            if (name.equals("equals")) {
                return proxy == args[0];
            }
            if (name.equals("hashCode")) {
                return System.identityHashCode(proxy);
            }
            return call(target, m, args);
        }
    }

    private static final class ResultSetHandler implements InvocationHandler {
        private final ResultSet target;
        private final Kind kind;
        private int rows;
        private boolean ended;

        ResultSetHandler(ResultSet target, Kind kind) {
            this.target = target;
            this.kind = kind;
        }

        @Override
        public Object invoke(Object proxy, Method m, Object[] args) throws Throwable {
            Object r = call(target, m, args);
            if (m.getName().equals("next") && !ended) {
                if ((Boolean) r) {
                    rows++;
                    kind.rows.increment();
                } else {
                    ended = true;
                    if (rows == 0) {
                        kind.empty.increment();
                    }
                }
            } else if (m.getName().equals("close") && !ended) {
                ended = true;
                if (rows == 0) {
                    kind.empty.increment();
                }
            }
            return r;
        }
    }
}
