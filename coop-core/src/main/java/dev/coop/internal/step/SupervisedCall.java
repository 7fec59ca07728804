package dev.coop.internal.step;

import dev.coop.failure.StepTimedOutException;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * User code on a thread of its own ({@link StepThreads}) while the worker that started it waits: up to the step's
 * timeout, past which the step fails with {@link StepTimedOutException} (its connection revoked, its thread
 * interrupted and left to it), and, in a round, checking the round's budget so that a slow step does not hold the
 * round's other runs ({@link RoundSplit}). An interrupt of the waiting worker (a shutdown that ran out of time) is
 * passed on to the user code's thread.
 */
final class SupervisedCall {
    private static final Logger log = LoggerFactory.getLogger(SupervisedCall.class);
    /** How long a revoked connection's statement in flight has to end after its cancel request; then it is aborted. */
    private static final long REVOKE_GRACE_NANOS = TimeUnit.SECONDS.toNanos(1);
    /** How often a waiting worker looks at its round's budget (measured with the engine's clock, maybe a test's). */
    private static final long BUDGET_CHECK_NANOS = StepRound.BUDGET_NANOS;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition ended = lock.newCondition();
    private boolean done;
    private Throwable thrown;
    private Thread thread;
    /** Set by the worker when it stopped waiting (timed out): the user code's late end is not the step's. */
    private volatile StepTimedOutException timedOut;

    private SupervisedCall() {
    }

    /** What runs on the step thread; returns what the user code threw, or null. */
    @FunctionalInterface
    interface Body {
        Throwable run(SupervisedCall call);
    }

    /**
     * Runs {@code body} on a step thread and waits for it.
     *
     * @param timeout the step's timeout, or null
     * @param split the round the step belongs to, when it may leave it, or null
     * @return what the user code threw, or the {@link StepTimedOutException} when it ran past its timeout
     */
    static Throwable run(Body body, StepContextImpl<?> context, Duration timeout, RoundSplit split) {
        SupervisedCall call = new SupervisedCall();
        StepThreads.start(() -> call.execute(body));
        return call.await(context, timeout, split);
    }

    private void execute(Body body) {
        lock.lock();
        try {
            thread = Thread.currentThread();
        } finally {
            lock.unlock();
        }
        Throwable result;
        try {
            result = body.run(this);
        } catch (Throwable t) { // the body turns user code's throws into values; this is Coop's own
            result = t;
        }
        lock.lock();
        try {
            thread = null;
            Thread.interrupted(); // an interrupt passed on late is not the next step's
            done = true;
            thrown = result;
            ended.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** The timeout the worker gave up on, when it did: the step thread reports that to listeners. */
    StepTimedOutException timedOut() {
        return timedOut;
    }

    private Throwable await(StepContextImpl<?> context, Duration timeout, RoundSplit split) {
        long start = System.nanoTime();
        long deadline = timeout == null ? Long.MAX_VALUE : start + timeout.toNanos();
        RoundSplit round = split;
        lock.lock();
        try {
            while (!done) {
                long now = System.nanoTime();
                if (timeout != null && now - deadline >= 0) {
                    break;
                }
                long wait = timeout == null ? Long.MAX_VALUE : deadline - now;
                if (round != null) {
                    wait = Math.min(wait, BUDGET_CHECK_NANOS);
                }
                try {
                    ended.awaitNanos(wait);
                } catch (InterruptedException e) {
                    passOnInterrupt();
                    continue;
                }
                if (!done && round != null && round.due()) {
                    RoundSplit.Outcome outcome = leaveRound(context, round);
                    if (outcome == RoundSplit.Outcome.LOST) {
                        return null; // the context says so; the step's outcome is not wanted
                    }
                    round = outcome == RoundSplit.Outcome.LEFT ? null : round;
                } else if (round != null && !round.open()) {
                    round = null; // the step used its connection: it stays in the round
                }
            }
            if (done) {
                return thrown;
            }
        } finally {
            lock.unlock();
        }
        return timedOut(context, timeout);
    }

    /** Commits the round without the step (outside this call's lock: the step may need it to end meanwhile). */
    private RoundSplit.Outcome leaveRound(StepContextImpl<?> context, RoundSplit round) {
        RoundSplit.Outcome outcome;
        lock.unlock();
        try {
            outcome = round.split(context);
        } catch (RuntimeException | Error e) { // the round is aborted: its runs are executed again, alone
            abandon(context);
            throw e;
        } finally {
            lock.lock();
        }
        if (outcome == RoundSplit.Outcome.LOST) {
            abandon(context);
        }
        return outcome;
    }

    /** The step's outcome is not wanted: its connection refuses every further use, its thread is interrupted. */
    private void abandon(StepContextImpl<?> context) {
        if (!context.revoke(REVOKE_GRACE_NANOS)) {
            context.session.abort();
        }
        lock.lock();
        try {
            passOnInterrupt();
        } finally {
            lock.unlock();
        }
    }

    private void passOnInterrupt() {
        if (thread != null) {
            thread.interrupt();
        }
    }

    /**
     * The step ran past its timeout: its connection refuses every further use (a statement in flight is cancelled,
     * and the connection aborted when that does not end it), its thread is interrupted and left to it.
     */
    private Throwable timedOut(StepContextImpl<?> context, Duration timeout) {
        StepTimedOutException e = new StepTimedOutException("Step '" + context.step() + "' of saga '"
                + context.saga() + "' ran past its timeout of " + timeout.toMillis() + " ms (attempt "
                + context.attempt() + "); its writes were rolled back and its thread interrupted", timeout);
        timedOut = e;
        boolean free = context.revoke(REVOKE_GRACE_NANOS);
        String name;
        lock.lock();
        try {
            name = thread == null ? null : thread.getName();
            passOnInterrupt();
        } finally {
            lock.unlock();
        }
        if (!free) {
            log.warn("Run {} (saga {}): step '{}' ran past its timeout inside a statement that its cancel did not end;"
                    + " aborting its connection", context.runId(), context.saga(), context.step());
            context.session.abort();
        }
        log.warn("Run {} (saga {}): step '{}' ran past its timeout of {} ms{}", context.runId(), context.saga(),
                context.step(), timeout.toMillis(), name == null
                        ? ""
                        : "; its thread " + name
                                + " was interrupted and is left to it");
        return e;
    }
}
