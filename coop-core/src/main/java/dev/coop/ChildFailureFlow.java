package dev.coop;

import dev.coop.failure.CooperationException;

/**
 * A child-failure handler that also decides where the run goes next (see
 * {@link Saga.Builder#onChildFailure(ChildFailureFlow)}): like {@link ChildFailureHandler}, returning normally means
 * handled and throwing rolls the run back, and the {@link Flow} it returns replaces the step's own decision. Messages
 * launched here are awaited first (a retry, say); if they fail too, the handler runs again, with {@code handling}
 * one higher.
 */
@FunctionalInterface
public interface ChildFailureFlow<P> {
    /**
     * @param step the step whose children failed ({@link StepContext#iteration()} is that step's iteration);
     *        {@code launch} works as in the step
     * @param failure a {@link dev.coop.failure.ChildRolledBackException} or
     *        {@link dev.coop.failure.ChildRollbackFailedException} whose causes are every child failure of that step
     * @param handling which handler run this is for the step's instance: 1 the first time, 2 when runs launched by
     *        the first failed too, and so on
     * @param pending the step's own decision ({@link Flow#next()}, {@link Flow#repeat()} or a {@link Flow#goTo}),
     *        which applies unless this returns another
     * @return where the run goes next once what this launched finished; null or {@code pending} keeps the step's
     *         decision
     */
    Flow handle(StepContext<P> step, CooperationException failure, int handling, Flow pending) throws Exception;
}
