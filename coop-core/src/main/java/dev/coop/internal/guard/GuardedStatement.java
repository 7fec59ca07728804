package dev.coop.internal.guard;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Statement;
import java.util.Set;

/**
 * A statement created on a step's guarded connection ({@link GuardedConnection}): SQL given to it is checked before it
 * is sent ({@link TransactionEnds}), {@code getConnection()} gives the guarded connection back, and it cannot be used
 * once the step ended (it would run in the worker's next transaction).
 */
final class GuardedStatement implements InvocationHandler {
    private static final Set<String> CHECKED = Set.of("execute", "executeQuery", "executeUpdate", "executeLargeUpdate",
            "addBatch");
    private static final Set<String> ALWAYS = Set.of("close", "isClosed");

    private final Statement target;
    private final GuardedConnection connection;

    private GuardedStatement(Statement target, GuardedConnection connection) {
        this.target = target;
        this.connection = connection;
    }

    /** @param type the interface the statement is used as: Statement, PreparedStatement or CallableStatement */
    static Statement wrap(Statement target, Class<?> type, GuardedConnection connection) {
        Class<?> as = type.isInterface() && Statement.class.isAssignableFrom(type) ? type : Statement.class;
        return (Statement) Proxy.newProxyInstance(Statement.class.getClassLoader(), new Class<?>[]{as},
                new GuardedStatement(target, connection));
    }

    @Override
    public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
        String name = method.getName();
        if (method.getDeclaringClass() == Object.class) {
            return switch (name) {
                case "equals" -> proxy == args[0];
                case "hashCode" -> System.identityHashCode(proxy);
                default -> "StepStatement[" + target + "]";
            };
        }
        if (ALWAYS.contains(name)) { // closing is local: allowed after the step ended (try-with-resources)
            return GuardedConnection.call(target, method, args);
        }
        connection.enter();
        try {
            return guarded(proxy, method, args, name);
        } finally {
            connection.exit();
        }
    }

    private Object guarded(Object proxy, Method method, Object[] args, String name) throws Throwable {
        if (CHECKED.contains(name) && args != null && args.length > 0 && args[0] instanceof String sql) {
            connection.check(sql);
        }
        if (name.equals("getConnection")) {
            return connection.proxy();
        }
        if (name.equals("unwrap") && args != null && args[0] instanceof Class<?> type && type.isInstance(proxy)) {
            return proxy;
        }
        return GuardedConnection.call(target, method, args);
    }
}
