package dev.coop.bench;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/**
 * The prepared statements Coop's code executes on a connection, with the values it bound: so that the benchmark can
 * EXPLAIN exactly what a client call sends ({@link #explain}), without copying its SQL.
 */
final class CapturedStatements {
    /** One executed statement: its text and the setter calls that bound its parameters, in order. */
    record Statement(String sql, List<Binding> bindings) {
    }

    record Binding(Method setter, Object[] args) {
    }

    private final List<Statement> executed = new ArrayList<>();

    /** {@code target} seen through a proxy that records every prepared statement executed on it. */
    Connection wrap(Connection target) {
        return (Connection) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[]{Connection.class},
                (proxy, m, args) -> {
                    Object r = call(target, m, args);
                    if (m.getName().equals("prepareStatement") && r instanceof PreparedStatement ps) {
                        return Proxy.newProxyInstance(getClass().getClassLoader(),
                                new Class<?>[]{PreparedStatement.class}, new Recorder(ps, (String) args[0]));
                    }
                    return r;
                });
    }

    /** {@code target} whose connections are {@link #wrap(Connection) wrapped}. */
    DataSource wrap(DataSource target) {
        return (DataSource) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[]{DataSource.class},
                (proxy, m, args) -> {
                    Object r = call(target, m, args);
                    return r instanceof Connection c && m.getName().equals("getConnection") ? wrap(c) : r;
                });
    }

    synchronized List<Statement> executed() {
        return List.copyOf(executed);
    }

    synchronized void clear() {
        executed.clear();
    }

    /** EXPLAIN (ANALYZE, BUFFERS) of a captured statement, in a transaction that is rolled back. */
    static List<String> explain(DataSource ds, Statement s) throws Exception {
        List<String> plan = new ArrayList<>();
        try (Connection c = ds.getConnection()) {
            c.setAutoCommit(false);
            try (PreparedStatement ps = c.prepareStatement("EXPLAIN (ANALYZE, BUFFERS) " + s.sql())) {
                for (Binding b : s.bindings()) {
                    b.setter().invoke(ps, b.args());
                }
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        plan.add(rs.getString(1));
                    }
                }
            } finally {
                c.rollback();
            }
        }
        return plan;
    }

    private final class Recorder implements InvocationHandler {
        private final PreparedStatement target;
        private final String sql;
        private final List<Binding> bindings = new ArrayList<>();

        Recorder(PreparedStatement target, String sql) {
            this.target = target;
            this.sql = sql;
        }

        @Override
        public Object invoke(Object proxy, Method m, Object[] args) throws Throwable {
            if (m.getName().startsWith("set") && args != null && args.length >= 2 && args[0] instanceof Integer) {
                bindings.add(new Binding(m, args.clone()));
            } else if (m.getName().startsWith("execute") && (args == null || args.length == 0)) {
                synchronized (CapturedStatements.this) {
                    executed.add(new Statement(sql, List.copyOf(bindings)));
                }
            }
            return call(target, m, args);
        }
    }

    private static Object call(Object target, Method m, Object[] args) throws Throwable {
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    static boolean anySeqScan(List<String> plan, String... tables) {
        for (String line : plan) {
            for (String t : tables) {
                if (line.contains("Seq Scan on " + t)) {
                    return true;
                }
            }
        }
        return false;
    }
}
