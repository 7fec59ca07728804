package dev.coop.internal.guard;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.Executor;
import javax.sql.DataSource;

/**
 * Bounds how long Coop's own statements wait for the database: a socket read timeout
 * ({@link Connection#setNetworkTimeout}, a local setting: no round trip) on the connections Coop uses for its
 * bookkeeping, lifted to the connection's own while user code runs on a step's connection (a slow statement of the
 * user's is not Coop's to end). A statement that times out breaks its connection (SQLSTATE class 08): database trouble,
 * retried, never a step failure.
 */
public final class NetworkTimeouts {
    private static final Executor DIRECT = Runnable::run;
    /** The step's connection on this worker thread: its own timeout (for user code) and Coop's; null when none. */
    private static final ThreadLocal<int[]> STEP = new ThreadLocal<>();

    private NetworkTimeouts() {
    }

    /**
     * Sets Coop's timeout on a connection just taken (unless its own is shorter; 0 = none). A connection that does not
     * support network timeouts (some wrappers) is left as it is.
     *
     * @return the connection's own timeout, to give back to user code and to the pool; -1 when it cannot be read
     */
    public static int bound(Connection c, int coopMillis) {
        if (coopMillis <= 0) {
            return -1;
        }
        try {
            int own = c.getNetworkTimeout();
            if (own == 0 || own > coopMillis) {
                c.setNetworkTimeout(DIRECT, coopMillis);
            }
            return own;
        } catch (SQLException | RuntimeException | AbstractMethodError e) {
            return -1; // not supported, or already broken: its next use says so
        }
    }

    /** Sets {@code millis} (-1: leaves it), ignoring a connection that is already broken (its next use says so). */
    public static void set(Connection c, int millis) {
        if (millis < 0) {
            return;
        }
        try {
            if (c.getNetworkTimeout() != millis) {
                c.setNetworkTimeout(DIRECT, millis);
            }
        } catch (SQLException | RuntimeException | AbstractMethodError ignored) {
            // a closed or broken connection: the statement that follows fails as database trouble
        }
    }

    /** The worker on this thread took {@code c} for steps: its own timeout and Coop's, for {@link #forUserCode}. */
    public static void stepConnection(int own, int coop) {
        STEP.set(coop > 0 && own >= 0 && (own == 0 || own > coop) ? new int[]{own, coop} : null);
    }

    public static void noStepConnection() {
        STEP.remove();
    }

    /** User code starts on {@code c}: the connection's own timeout applies. */
    public static void forUserCode(Connection c) {
        int[] timeouts = STEP.get();
        if (timeouts != null) {
            set(c, timeouts[0]);
        }
    }

    /** User code returned: Coop's timeout applies again. */
    public static void forCoop(Connection c) {
        int[] timeouts = STEP.get();
        if (timeouts != null) {
            set(c, timeouts[1]);
        }
    }

    /**
     * A DataSource whose connections have Coop's timeout while the caller holds them, and their own again when closed
     * (for a client's own connections: a launch then fails within the timeout instead of hanging on a dead one).
     */
    public static DataSource bounding(DataSource dataSource, int coopMillis) {
        if (coopMillis <= 0) {
            return dataSource;
        }
        return (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(), new Class<?>[]{DataSource.class},
                (proxy, method, args) -> {
                    Object result = call(dataSource, method, args);
                    if (result instanceof Connection c && method.getName().equals("getConnection")) {
                        return bounded(c, coopMillis);
                    }
                    return result;
                });
    }

    private static Connection bounded(Connection c, int coopMillis) {
        int own = bound(c, coopMillis);
        if (own < 0) {
            return c; // no network timeout to set: as it is
        }
        return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[]{Connection.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("close") && method.getParameterCount() == 0) {
                        set(c, own); // the pool's next user gets the connection as it was
                    } else if (method.getName().equals("unwrap") && args[0] instanceof Class<?> type
                            && type.isInstance(proxy)) {
                        return proxy;
                    } else if (method.getDeclaringClass() == Object.class && method.getName().equals("equals")) {
                        return proxy == args[0];
                    }
                    return call(c, method, args);
                });
    }

    private static Object call(Object target, java.lang.reflect.Method method, Object[] args) throws Throwable {
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
