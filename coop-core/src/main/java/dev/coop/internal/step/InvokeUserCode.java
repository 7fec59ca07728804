package dev.coop.internal.step;

import dev.coop.internal.Listeners;
import dev.coop.internal.StepTransactionHook;
import dev.coop.internal.guard.NetworkTimeouts;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one place user code runs (a step, a finally part, a child-failure handler, a compensation): whatever it throws
 * becomes a value, and the engine's thread, timeouts, log context and listeners are set around it and restored.
 */
final class InvokeUserCode {
    private static final Logger log = LoggerFactory.getLogger(InvokeUserCode.class);

    private InvokeUserCode() {
    }

    /**
     * Runs user code, turning anything it throws into a value; the context's connection is closed afterwards. While
     * it runs, the MDC names the run and step, and the engine's listeners are told of its start and end.
     */
    static Throwable invoke(UserCode code, StepContextImpl<?> context) {
        StepRound round = StepRound.current();
        if (round != null) { // the steps before it are written whole before user code uses the connection
            context.beforeFirstUse(round::firstUse);
        }
        StepLogContext.enter(context);
        Listeners listeners = context.listeners();
        Object[] states = listeners.isEmpty() ? null : listeners.stepStarted(context, context.part());
        long start = states == null ? 0 : System.nanoTime();
        Throwable thrown = run(code, context, listeners);
        try {
            thrown = context.withRefusal(thrown); // a refused statement fails the part, even when it was caught
            if (thrown == null) { // a part that failed is reset after its writes are undone (discardWrites)
                thrown = resetSession(context);
            }
        } finally {
            if (states != null) {
                listeners.stepEnded(context, context.part(), states, context.outcome(thrown),
                        System.nanoTime() - start, thrown);
            }
            StepLogContext.leave();
            context.close();
            if (Thread.interrupted()) {
                log.debug("Step code of run {} left its thread interrupted; cleared", context.runId());
            }
        }
        if (round != null) {
            round.checkBroken(); // the deferred advances could not be sent: not this step's failure
        }
        return thrown;
    }

    /**
     * Gives the connection back as Coop had it when the code used it, before Coop's own statements: what the code
     * set cannot change how they run, nor reach another run. A reset that fails fails the part: the code left its
     * transaction unusable (aborted, or under a limit Coop's statement could not meet).
     */
    private static Throwable resetSession(StepContextImpl<?> context) {
        try {
            context.resetSession();
            return null;
        } catch (java.sql.SQLException e) {
            return e;
        }
    }

    /** Runs the code with the user's network timeout, in the listeners' transaction hook if there is one. */
    private static Throwable run(UserCode code, StepContextImpl<?> context, Listeners listeners) {
        Throwable thrown = null;
        NetworkTimeouts.forUserCode(context.rawConnection()); // a slow statement of the user's is not Coop's to end
        try {
            StepTransactionHook hook = listeners.transactionHook();
            if (hook == null) {
                code.run();
            } else {
                inTransaction(hook, code, context);
            }
        } catch (Throwable t) {
            thrown = t;
        }
        NetworkTimeouts.forCoop(context.rawConnection());
        return thrown;
    }

    /** Runs user code between the hook's begin and end: a framework's transaction on the step's connection. */
    private static void inTransaction(StepTransactionHook hook, UserCode code, StepContextImpl<?> context)
            throws Exception {
        Object transaction = hook.begin(context);
        try {
            code.run();
        } catch (Throwable t) {
            try {
                hook.end(transaction, t);
            } catch (Throwable e) {
                t.addSuppressed(e);
            }
            throw t;
        }
        hook.end(transaction, null);
    }

    @FunctionalInterface
    interface UserCode {
        void run() throws Exception;
    }
}
