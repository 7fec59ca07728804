package dev.coop.internal;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.util.Set;

/**
 * The connection a step sees: the step's own, except that ending or detaching the transaction is refused, because
 * the step's writes, its messages and its log rows must commit together.
 */
final class GuardedConnection implements InvocationHandler {
    private static final Set<String> REFUSED = Set.of("commit", "rollback", "close", "setAutoCommit", "abort",
            "releaseSavepoint", "setTransactionIsolation");

    private final Connection target;
    private volatile boolean open = true;

    private GuardedConnection(Connection target) {
        this.target = target;
    }

    static Guard wrap(Connection target) {
        GuardedConnection handler = new GuardedConnection(target);
        Connection proxy = (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(),
                new Class<?>[]{Connection.class}, handler);
        return new Guard(proxy, handler);
    }

    /** The proxy, and a way to make it unusable once the step ended. */
    record Guard(Connection connection, GuardedConnection handler) {
        void close() {
            handler.open = false;
        }
    }

    @Override
    public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
        String name = method.getName();
        if (name.equals("isClosed") && method.getParameterCount() == 0) {
            return !open || target.isClosed();
        }
        if (!open) {
            throw new IllegalStateException("This step's connection can only be used while the step runs");
        }
        boolean rollbackToSavepoint = name.equals("rollback") && method.getParameterCount() == 1;
        if (REFUSED.contains(name) && !rollbackToSavepoint) {
            throw new IllegalStateException("A step must not call Connection." + name
                    + "(): Coop commits or rolls back the step's transaction when the step ends");
        }
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
