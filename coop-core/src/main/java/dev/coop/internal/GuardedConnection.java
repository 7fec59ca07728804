package dev.coop.internal;

import dev.coop.Coop;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.util.Set;

/**
 * The connection a step sees: the step's own transaction, except that ending or detaching it is refused, because the
 * step's writes, its messages and its log rows must commit together. Before the step first uses it, a savepoint is
 * set, so that a failing step's writes can be undone without releasing the run's row lock (which another engine
 * would otherwise take, running the step again). A step that never touches the connection costs no savepoint.
 */
final class GuardedConnection implements InvocationHandler {
    private static final Set<String> REFUSED = Set.of("commit", "rollback", "close", "setAutoCommit", "abort",
            "setTransactionIsolation");
    private static final Set<String> HARMLESS = Set.of("isClosed", "getAutoCommit", "isReadOnly", "unwrap",
            "isWrapperFor");

    private final Connection target;
    private volatile boolean open = true;
    private Savepoint savepoint;

    private GuardedConnection(Connection target) {
        this.target = target;
    }

    static Guard wrap(Connection target) {
        GuardedConnection handler = new GuardedConnection(target);
        Connection proxy = (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(),
                new Class<?>[]{Connection.class}, handler);
        return new Guard(proxy, handler);
    }

    /** The proxy, and the means to end its use. */
    record Guard(Connection connection, GuardedConnection handler) {
        /** The step ended: the connection handed out can no longer be used. */
        void close() {
            handler.open = false;
        }

        /** Undoes everything the step did on the connection; the transaction stays usable and its locks held. */
        void discardWrites() throws SQLException {
            handler.open = false;
            if (handler.savepoint != null) {
                handler.target.rollback(handler.savepoint);
                handler.savepoint = null;
            }
        }
    }

    @Override
    public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
        String name = method.getName();
        if (method.getDeclaringClass() == Object.class) {
            return switch (name) {
                case "equals" -> proxy == args[0];
                case "hashCode" -> System.identityHashCode(proxy);
                default -> "StepConnection[" + target + "]";
            };
        }
        if (name.equals("isClosed") && method.getParameterCount() == 0) {
            return !open || target.isClosed();
        }
        if (!open) {
            throw new IllegalStateException("This step's connection can only be used while the step runs");
        }
        if (name.equals("unwrap") && args != null && args[0] instanceof Class<?> type && type.isInstance(proxy)) {
            return proxy; // unwrap(Connection.class) is this guard, never the raw connection
        }
        if ((name.equals("releaseSavepoint") || name.equals("rollback")) && args != null && args[0] == savepoint) {
            throw new IllegalStateException("A step must not release or roll back to Coop's own savepoint");
        }
        boolean rollbackToSavepoint = name.equals("rollback") && method.getParameterCount() == 1;
        if (REFUSED.contains(name) && !rollbackToSavepoint) {
            throw new IllegalStateException("A step must not call Connection." + name
                    + "(): Coop commits or rolls back the step's transaction when the step ends");
        }
        if (savepoint == null && !HARMLESS.contains(name)) {
            savepoint = target.setSavepoint();
        }
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
