package dev.coop.internal.guard;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.util.Set;

/**
 * The connection a step sees: the step's own transaction, except that ending or detaching it is refused, because the
 * step's writes, its messages and its log rows must commit together. Before the step first uses it, a savepoint is
 * set, so that a failing step's writes can be undone without releasing the run's row lock (which another engine
 * would otherwise take, running the step again). A step that never touches the connection costs no savepoint.
 *
 * <p>Ending the transaction is refused by every route of the JDBC API: {@code commit()}, {@code rollback()},
 * {@code setAutoCommit}, and SQL that ends or splits it ({@link TransactionEnds}) given to {@code prepareStatement},
 * {@code prepareCall}, {@code nativeSQL}, or to the {@code execute...} and {@code addBatch} methods of the statements
 * it hands out (which are guarded too, and give this connection back from {@code getConnection()}). A refusal fails
 * the statement before anything is sent, and is remembered ({@link Guard#refusal()}): the step fails even if it
 * caught the exception. What the driver's own classes do when unwrapped is beyond this guard; the engine's last line
 * of defence (the advance's check of the transaction id, and the savepoint) catches it.
 */
public final class GuardedConnection implements InvocationHandler {
    /** SQLSTATE of a refused statement: invalid_transaction_termination, as PostgreSQL says in a procedure. */
    static final String REFUSED_STATE = "2D000";
    /** SQLSTATE of a step whose transaction was ended under it (the same as {@code claim_lost()}, schema version 4). */
    public static final String ENDED_STATE = "CP002";
    private static final Set<String> CHECKED_CONNECTION = Set.of("prepareStatement", "prepareCall", "nativeSQL");
    private static final Set<String> STATEMENTS = Set.of("createStatement", "prepareStatement", "prepareCall");

    private static final Set<String> REFUSED = Set.of("commit", "rollback", "close", "setAutoCommit", "abort",
            "setTransactionIsolation");
    private static final Set<String> HARMLESS = Set.of("isClosed", "getAutoCommit", "isReadOnly", "unwrap",
            "isWrapperFor");

    private final Connection target;
    private volatile boolean open = true;
    private Savepoint savepoint;
    /** Whether the step used the connection (then its session is reset after it: {@link SessionReset}). */
    private boolean used;
    /** What names the functions that take transaction-level advisory locks ({@code pg_advisory_xact_lock} and kin). */
    private static final String XACT_LOCK = "advisory_xact_lock";
    /** Whether SQL the step sent names them: the locks it took then last until its transaction ends. */
    private boolean transactionLocks;
    private Connection proxy;
    /** What runs before the step's first use of the connection, once (null: nothing). */
    private FirstUse firstUse;
    /** The first refusal, kept: the step fails even when it caught it. */
    private volatile Exception refusal;
    /** The calls in flight on the connection and its statements, for {@link Guard#revoke}. */
    private final java.util.concurrent.atomic.AtomicInteger inFlight = new java.util.concurrent.atomic.AtomicInteger();

    private GuardedConnection(Connection target) {
        this.target = target;
    }

    public static Guard wrap(Connection target) {
        GuardedConnection handler = new GuardedConnection(target);
        Connection proxy = (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(),
                new Class<?>[]{Connection.class}, handler);
        handler.proxy = proxy;
        return new Guard(proxy, handler);
    }

    /** Work to do on the connection before a step first uses it. */
    @FunctionalInterface
    public interface FirstUse {
        void run() throws SQLException;
    }

    /** The proxy, and the means to end its use. */
    public record Guard(Connection connection, GuardedConnection handler) {
        /**
         * Runs {@code action} on the connection before the step first uses it (anything but asking whether it is
         * closed, read-only or in auto-commit; unwrapping it counts), once.
         */
        public void beforeFirstUse(FirstUse action) {
            handler.firstUse = action;
        }

        /** The step ended: the connection handed out can no longer be used. */
        public void close() {
            handler.open = false;
        }

        /** The connection under the guard (for Coop's own settings while user code runs). */
        public Connection target() {
            return handler.target;
        }

        /**
         * Ends the step's use of the connection from another thread (its timeout passed while it still runs): no call
         * starts any more, and a statement in flight is cancelled on the server and waited for, {@code graceNanos} at
         * most.
         *
         * @return whether no call of the step is in flight any more (false: the connection cannot be trusted and must
         *         be aborted)
         */
        public boolean revoke(long graceNanos) {
            return handler.revoke(graceNanos);
        }

        /**
         * Whether the step used the connection (anything but asking whether it is closed, read-only or in
         * auto-commit): then what it may have left on it is reset ({@link SessionReset}).
         */
        public boolean used() {
            return handler.used;
        }

        /**
         * Whether SQL the step sent takes transaction-level advisory locks ({@code pg_advisory_xact_lock},
         * {@code pg_try_advisory_xact_lock} and their shared forms, called by name): they last until the transaction
         * ends, which no reset changes. Read from the text the step sent, not from {@code pg_locks} (a read of the
         * whole lock table costs about a millisecond); a lock taken inside a function the step calls is not seen.
         */
        public boolean tookTransactionLocks() {
            return handler.transactionLocks;
        }

        /** What the step was refused (it tried to end its transaction), or null. */
        public Exception refusal() {
            return handler.refusal;
        }

        /**
         * Undoes everything the step did on the connection; the transaction stays usable and its locks held.
         *
         * @throws SQLException with SQLSTATE {@value #ENDED_STATE} when the savepoint is gone: the step ended its
         *         transaction by a route the guard cannot see (the driver's own classes), so what it wrote before may
         *         be committed and the run's lock was let go; with the database's state otherwise
         */
        public void discardWrites() throws SQLException {
            handler.open = false;
            if (handler.savepoint != null) {
                Savepoint savepoint = handler.savepoint;
                handler.savepoint = null;
                try {
                    handler.target.rollback(savepoint);
                } catch (SQLException e) {
                    // invalid_savepoint_specification (not in this transaction), no_active_sql_transaction (none)
                    if ("3B001".equals(e.getSQLState()) || "25P01".equals(e.getSQLState())) {
                        throw ended(e);
                    }
                    throw e;
                }
            }
        }
    }

    /** The step's transaction is not the one it started in. */
    static SQLException ended(Throwable cause) {
        return new SQLException("The step ended the transaction that claimed its run (its savepoint is gone); Coop"
                + " commits or rolls back a step's transaction itself, so this step cannot be committed",
                ENDED_STATE, cause);
    }

    /** Refuses {@code sql} when it would end or split the transaction. */
    void check(String sql) throws SQLException {
        if (sql != null && !transactionLocks && sql.toLowerCase(java.util.Locale.ROOT).contains(XACT_LOCK)) {
            transactionLocks = true;
        }
        String found = TransactionEnds.find(sql);
        if (found != null) {
            SQLException e = new SQLException("A step must not end its transaction with " + found + ": Coop commits"
                    + " or rolls back the step's transaction when the step ends (the statement was not sent)",
                    REFUSED_STATE);
            if (refusal == null) {
                refusal = e;
            }
            throw e;
        }
    }

    @Override
    public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
        String name = method.getName();
        if (method.getDeclaringClass() == Object.class) {
            return objectMethod(proxy, name, args);
        }
        if (name.equals("isClosed") && method.getParameterCount() == 0) {
            return !open || target.isClosed();
        }
        enter();
        try {
            return guarded(proxy, method, args, name);
        } finally {
            exit();
        }
    }

    private Object guarded(Object proxy, Method method, Object[] args, String name) throws Throwable {
        if (!HARMLESS.contains(name) || name.equals("unwrap")) {
            used = true;
        }
        if (firstUse != null && (!HARMLESS.contains(name) || name.equals("unwrap"))) {
            FirstUse action = firstUse;
            firstUse = null;
            action.run();
        }
        if (name.equals("unwrap") && args != null && args[0] instanceof Class<?> type && type.isInstance(proxy)) {
            return proxy; // unwrap(Connection.class) is this guard, never the raw connection
        }
        refuseEnds(name, method, args);
        if (CHECKED_CONNECTION.contains(name) && args != null && args[0] instanceof String sql) {
            check(sql);
        }
        if (savepoint == null && !HARMLESS.contains(name)) {
            savepoint = target.setSavepoint();
        }
        Object result = call(target, method, args);
        if (STATEMENTS.contains(name) && result instanceof Statement statement) {
            return GuardedStatement.wrap(statement, method.getReturnType(), this);
        }
        return result;
    }

    /** {@code equals}, {@code hashCode} and {@code toString} of the proxy itself. */
    private Object objectMethod(Object proxy, String name, Object[] args) {
        return switch (name) {
            case "equals" -> proxy == args[0];
            case "hashCode" -> System.identityHashCode(proxy);
            default -> "StepConnection[" + target + "]";
        };
    }

    /** Refuses what would end the step's transaction, or release or roll back to Coop's own savepoint. */
    private void refuseEnds(String name, Method method, Object[] args) {
        if ((name.equals("releaseSavepoint") || name.equals("rollback")) && args != null && args[0] == savepoint) {
            throw new IllegalStateException("A step must not release or roll back to Coop's own savepoint");
        }
        boolean rollbackToSavepoint = name.equals("rollback") && method.getParameterCount() == 1;
        if (REFUSED.contains(name) && !rollbackToSavepoint) {
            IllegalStateException e = new IllegalStateException("A step must not call Connection." + name
                    + "(): Coop commits or rolls back the step's transaction when the step ends");
            // trying to end it is sticky; closing it, changing its isolation or turning auto-commit off would not
            boolean ends = !name.equals("close") && !name.equals("setTransactionIsolation")
                    && !(name.equals("setAutoCommit") && Boolean.FALSE.equals(args[0]));
            if (refusal == null && ends) {
                refusal = e;
            }
            throw e;
        }
    }

    static Object call(Object target, Method method, Object[] args) throws Throwable {
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    /** The guarded connection (what guarded statements give back). */
    Connection proxy() {
        return proxy;
    }

    /** Fails when the step ended: statements it created cannot outlive it either. */
    void checkOpen() {
        if (!open) {
            throw new IllegalStateException("This step's connection can only be used while the step runs");
        }
    }

    /** A call begins: refused once the step ended (counted first, so that {@link #revoke} sees it or it sees that). */
    void enter() {
        inFlight.incrementAndGet();
        if (!open) {
            exit();
            throw new IllegalStateException("This step's connection can only be used while the step runs (it ended,"
                    + " or ran past its timeout)");
        }
    }

    void exit() {
        if (inFlight.decrementAndGet() == 0 && !open) {
            synchronized (inFlight) {
                inFlight.notifyAll();
            }
        }
    }

    private boolean revoke(long graceNanos) {
        open = false;
        if (inFlight.get() == 0) {
            return true;
        }
        try {
            target.unwrap(org.postgresql.core.BaseConnection.class).cancelQuery(); // a cancel request: no lock taken
        } catch (SQLException | RuntimeException e) {
            // not a PostgreSQL connection, or gone: wait for the call as it is
        }
        long deadline = System.nanoTime() + graceNanos;
        synchronized (inFlight) {
            for (long left = graceNanos; inFlight.get() > 0 && left > 0; left = deadline - System.nanoTime()) {
                try {
                    java.util.concurrent.TimeUnit.NANOSECONDS.timedWait(inFlight, left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return inFlight.get() == 0;
                }
            }
        }
        return inFlight.get() == 0;
    }
}
