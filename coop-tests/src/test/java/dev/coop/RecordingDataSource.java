package dev.coop;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.util.List;
import javax.sql.DataSource;

/** A data source whose connections record the SQL of every statement prepared on them (what an engine sends). */
final class RecordingDataSource {
    private RecordingDataSource() {
    }

    static DataSource of(DataSource delegate, List<String> sent) {
        return of(delegate, sent, null);
    }

    /**
     * As {@link #of(DataSource, List)}, and {@code closed} (when not null) receives the SQL of each prepared statement
     * when it is closed (the statement ran and its results were read), and {@code sent} also the SQL that plain
     * statements execute (the listener's LISTEN).
     */
    static DataSource of(DataSource delegate, List<String> sent, List<String> closed) {
        return (DataSource) java.lang.reflect.Proxy.newProxyInstance(DataSource.class.getClassLoader(),
                new Class<?>[]{DataSource.class}, (proxy, method, args) -> {
                    Object result = invoke(delegate, method, args);
                    if (!(result instanceof Connection connection)) {
                        return result;
                    }
                    return java.lang.reflect.Proxy.newProxyInstance(Connection.class.getClassLoader(),
                            new Class<?>[]{Connection.class}, (p, m, a) -> {
                                if (m.getName().equals("prepareStatement") && a != null && a[0] instanceof String sql) {
                                    sent.add(sql);
                                    Object statement = invoke(connection, m, a);
                                    return closed == null
                                            ? statement
                                            : closing((PreparedStatement) statement, sql, closed);
                                }
                                if (m.getName().equals("createStatement") && closed != null) {
                                    return executing((Statement) invoke(connection, m, a), sent);
                                }
                                return invoke(connection, m, a);
                            });
                });
    }

    private static PreparedStatement closing(PreparedStatement statement, String sql, List<String> closed) {
        return (PreparedStatement) java.lang.reflect.Proxy.newProxyInstance(PreparedStatement.class.getClassLoader(),
                new Class<?>[]{PreparedStatement.class}, (p, m, a) -> {
                    Object result = invoke(statement, m, a);
                    if (m.getName().equals("close")) {
                        closed.add(sql);
                    }
                    return result;
                });
    }

    private static Statement executing(Statement statement, List<String> sent) {
        return (Statement) java.lang.reflect.Proxy.newProxyInstance(Statement.class.getClassLoader(),
                new Class<?>[]{Statement.class}, (p, m, a) -> {
                    if (m.getName().startsWith("execute") && a != null && a.length > 0 && a[0] instanceof String sql) {
                        sent.add(sql);
                    }
                    return invoke(statement, m, a);
                });
    }

    private static Object invoke(Object target, java.lang.reflect.Method method, Object[] args) throws Throwable {
        try {
            return method.invoke(target, args);
        } catch (java.lang.reflect.InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
