package dev.coop.internal.step;

/**
 * The shared pieces of one worker's step path, built once per worker and handed to the stages that use them: the
 * transaction the stages work in, its commit, a rollback's start and end, retries after database trouble, and the
 * payload as read. Each stage takes only the pieces it uses.
 */
record StepPath(StepTransaction tx, Commits commits, Rollbacks rollbacks, RetryLater retries, Payloads payloads) {
    static StepPath of(EngineContext engine) {
        StepTransaction tx = new StepTransaction();
        Commits commits = new Commits(engine, tx);
        return new StepPath(tx, commits, new Rollbacks(commits), new RetryLater(engine, tx), new Payloads(engine));
    }
}
