package dev.coop.spring;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.util.Set;

/**
 * A connection of a transaction that someone else owns (Spring's, or a step's), handed to Coop's client: Coop's own
 * attempts to begin, commit, roll back or close it are ignored, so that its work becomes part of that transaction.
 * A failure still reaches the caller as an exception, which rolls the owner's transaction back.
 */
final class JoinedConnection implements InvocationHandler {
    private static final Set<String> IGNORED = Set.of("commit", "rollback", "close", "setAutoCommit");

    private final Connection target;

    private JoinedConnection(Connection target) {
        this.target = target;
    }

    static Connection wrap(Connection target) {
        return (Connection) Proxy.newProxyInstance(JoinedConnection.class.getClassLoader(),
                new Class<?>[]{Connection.class}, new JoinedConnection(target));
    }

    @Override
    public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
        String name = method.getName();
        if (method.getDeclaringClass() == Object.class) {
            return switch (name) {
                case "equals" -> proxy == args[0];
                case "hashCode" -> System.identityHashCode(proxy);
                default -> "JoinedConnection[" + target + "]";
            };
        }
        if (IGNORED.contains(name) && (args == null || args.length == 0 || name.equals("setAutoCommit"))) {
            return null; // the owner of the transaction ends it
        }
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
