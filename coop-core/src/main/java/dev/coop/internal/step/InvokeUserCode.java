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
        RoundSplit split = round == null || !context.splittable ? null : round.split();
        if (split != null && !split.open()) {
            split = null;
        }
        if (split != null || context.timeout != null) {
            return supervised(code, context, round, split);
        }
        if (round != null) { // the steps before it are written whole before user code uses the connection
            context.session.beforeFirstUse(round::firstUse);
        }
        StepLogContext.enter(context);
        Listeners listeners = context.listeners();
        Object[] states = listeners.isEmpty() ? null : listeners.stepStarted(context, context.part());
        long start = states == null ? 0 : System.nanoTime();
        Throwable thrown = run(code, context, listeners);
        try {
            thrown = context.session.withRefusal(thrown); // a refused statement fails the part, even when it was caught
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
     * Runs user code on a thread of its own while this worker waits ({@link SupervisedCall}): for a step with a
     * timeout, and for a step of a round, which leaves the round when it is slow ({@link RoundSplit}). The log
     * context, the listeners and the transaction hook are set on the user code's thread; Coop's network timeouts on
     * this one.
     */
    private static Throwable supervised(UserCode code, StepContextImpl<?> context, StepRound round,
            RoundSplit split) {
        if (split != null) {
            context.session.beforeFirstUse(split::firstUse);
        } else if (round != null) {
            context.session.beforeFirstUse(round::firstUse);
        }
        Listeners listeners = context.listeners();
        NetworkTimeouts.forUserCode(context.session.raw());
        Throwable thrown;
        try {
            thrown = SupervisedCall.run(call -> onStepThread(code, context, listeners, call), context,
                    context.timeout, split);
        } finally {
            context.close();
        }
        if (context.lost) {
            return null; // the run went to another transaction: nothing of this step is written
        }
        NetworkTimeouts.forCoop(context.session.raw());
        if (thrown == null) { // as on the worker's own thread: before Coop's statements (a failed part: discardWrites)
            thrown = resetSession(context);
        }
        if (round != null && (split == null || !split.happened())) {
            round.checkBroken();
        }
        return thrown;
    }

    /** What a supervised step's thread runs: the user code between its log context and its listeners. */
    private static Throwable onStepThread(UserCode code, StepContextImpl<?> context, Listeners listeners,
            SupervisedCall call) {
        StepLogContext.enter(context);
        Object[] states = listeners.isEmpty() ? null : listeners.stepStarted(context, context.part());
        long start = states == null ? 0 : System.nanoTime();
        Throwable thrown = null;
        try {
            thrown = runCode(code, context, listeners);
            thrown = context.session.withRefusal(thrown);
        } finally {
            if (states != null) {
                Throwable reported = call.timedOut() != null ? call.timedOut() : thrown;
                listeners.stepEnded(context, context.part(), states, context.outcome(reported),
                        System.nanoTime() - start, reported);
            }
            StepLogContext.leave();
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
            context.session.resetSession();
            return null;
        } catch (java.sql.SQLException e) {
            return e;
        }
    }

    /** Runs the code with the user's network timeout, in the listeners' transaction hook if there is one. */
    private static Throwable run(UserCode code, StepContextImpl<?> context, Listeners listeners) {
        NetworkTimeouts.forUserCode(context.session.raw()); // a slow statement of the user's is not Coop's to end
        Throwable thrown = runCode(code, context, listeners);
        NetworkTimeouts.forCoop(context.session.raw());
        return thrown;
    }

    /** Runs the code, in the listeners' transaction hook if there is one; returns what it threw, or null. */
    private static Throwable runCode(UserCode code, StepContextImpl<?> context, Listeners listeners) {
        try {
            StepTransactionHook hook = listeners.transactionHook();
            if (hook == null) {
                code.run();
            } else {
                inTransaction(hook, code, context);
            }
            return null;
        } catch (Throwable t) {
            return t;
        }
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
