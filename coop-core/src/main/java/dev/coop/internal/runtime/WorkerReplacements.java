package dev.coop.internal.runtime;

import dev.coop.internal.step.Dispatcher;
import dev.coop.internal.step.EngineContext;
import dev.coop.internal.step.Worker;

import java.util.List;
import java.util.function.BiFunction;

/**
 * Starts a worker in place of one that stays with a slow step which left its round (the step runs on, alone, with
 * that worker's connection; {@code RoundSplit}), so that the engine keeps its number of workers looking for work. At
 * most as many replacements at once as the engine has workers: the engine then holds at most twice its workers'
 * connections, and a further slow step holds its worker as a step claimed alone does. Replacements join the engine's
 * workers, which its shutdown waits for.
 */
final class WorkerReplacements implements Dispatcher.Replacements {
    private final EngineContext context;
    private final int max;
    private final List<Thread> threads;
    private final List<Worker> tasks;
    private final BiFunction<Runnable, String, Thread> start;
    private int replaced;
    private int started;

    /**
     * @param threads the engine's worker threads (thread-safe), which replacements join
     * @param tasks their workers, in the same order
     * @param start starts a thread with a role name
     */
    WorkerReplacements(EngineContext context, int max, List<Thread> threads, List<Worker> tasks,
            BiFunction<Runnable, String, Thread> start) {
        this.context = context;
        this.max = max;
        this.threads = threads;
        this.tasks = tasks;
        this.start = start;
    }

    @Override
    public synchronized boolean replace() {
        if (replaced >= max) {
            return false;
        }
        replaced++;
        Worker task = new Worker(context);
        tasks.add(task);
        threads.add(start.apply(task, "worker-r" + started++));
        return true;
    }

    @Override
    public synchronized void retired() {
        replaced--;
    }
}
