package dev.coop;

import java.sql.Connection;
import java.util.List;
import javax.sql.DataSource;

/** A data source whose connections record the SQL of every statement prepared on them (what an engine sends). */
final class RecordingDataSource {
    private RecordingDataSource() {
    }

    static DataSource of(DataSource delegate, List<String> sent) {
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
                                }
                                return invoke(connection, m, a);
                            });
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
