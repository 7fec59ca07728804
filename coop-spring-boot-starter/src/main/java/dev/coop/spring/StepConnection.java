package dev.coop.spring;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;

/**
 * The step's connection as Spring's transaction manager holds it: the step's guarded connection, which refuses to end
 * the transaction, except that the manager's own commit or rollback at the end of the step's code does nothing
 * (Coop commits the step, with its log rows, or rolls its writes back), and turning auto-commit off, which it
 * already is, is allowed (a JPA provider beginning its transaction does so).
 */
final class StepConnection implements InvocationHandler {
    private final Connection guarded;
    private final Connection proxy;
    private boolean ending;

    private StepConnection(Connection guarded) {
        this.guarded = guarded;
        this.proxy = (Connection) Proxy.newProxyInstance(StepConnection.class.getClassLoader(),
                new Class<?>[]{Connection.class}, this);
    }

    static StepConnection of(Connection guarded) {
        return new StepConnection(guarded);
    }

    Connection connection() {
        return proxy;
    }

    /** While set, commit() and rollback() are the transaction manager's, ending Spring's side of the step. */
    void ending(boolean ending) {
        this.ending = ending;
    }

    @Override
    public Object invoke(Object self, Method method, Object[] args) throws Throwable {
        String name = method.getName();
        if (method.getDeclaringClass() == Object.class) {
            return switch (name) {
                case "equals" -> self == args[0];
                case "hashCode" -> System.identityHashCode(self);
                default -> "SpringStepConnection[" + guarded + "]";
            };
        }
        boolean noArgs = args == null || args.length == 0;
        if (ending && noArgs && (name.equals("commit") || name.equals("rollback"))) {
            return null;
        }
        if (name.equals("setAutoCommit") && Boolean.FALSE.equals(args[0]) && !guarded.getAutoCommit()) {
            return null;
        }
        try {
            return method.invoke(guarded, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
