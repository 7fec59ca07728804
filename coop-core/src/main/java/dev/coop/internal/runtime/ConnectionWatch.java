package dev.coop.internal.runtime;

import dev.coop.internal.Listeners;
import dev.coop.internal.step.Dispatcher;
import dev.coop.internal.step.Worker;

import java.time.Duration;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine's thread that notices starving workers: a worker that has needed a connection from the DataSource and
 * got none (waiting in {@code getConnection}, or failing it) for {@value #STARVED_POLLS} poll intervals. The engine
 * then processes nothing: this is logged once as an ERROR and told to the listeners
 * ({@link dev.coop.EngineListener#connectionsStarved}), and again when connections come back.
 */
public final class ConnectionWatch implements Runnable {
    private static final Logger log = LoggerFactory.getLogger(ConnectionWatch.class);
    /** How many poll intervals without a connection make a worker starved. */
    static final int STARVED_POLLS = 5;

    private final String engineId;
    private final List<Worker> workers;
    private final Dispatcher dispatcher;
    private final Listeners listeners;
    private final long pollNanos;
    private final int needed;
    private boolean starved;

    /** @param needed the connections the engine needs at once (for the message) */
    public ConnectionWatch(String engineId, List<Worker> workers, Dispatcher dispatcher, Listeners listeners,
            long pollNanos, int needed) {
        this.engineId = engineId;
        this.workers = workers;
        this.dispatcher = dispatcher;
        this.listeners = listeners;
        this.pollNanos = pollNanos;
        this.needed = needed;
    }

    @Override
    public void run() {
        while (!dispatcher.stopped()) {
            try {
                // not dispatcher.pause: waiting on the dispatcher's condition would take wake-ups meant for workers
                Thread.sleep(java.time.Duration.ofNanos(pollNanos));
                check(System.nanoTime());
            } catch (InterruptedException e) {
                return;
            } catch (Throwable e) { // an Error too: the watch lives on
                log.warn("Engine {} could not check its workers' connections: {}", engineId, e.toString());
            }
        }
    }

    /** Compares each worker's wait for a connection with the threshold, and says so when the state changes. */
    void check(long now) {
        long oldest = 0;
        int waiting = 0;
        for (Worker w : workers) {
            long since = w.starvedSince();
            if (since != 0) {
                waiting++;
                oldest = oldest == 0 || since - oldest < 0 ? since : oldest;
            }
        }
        if (!starved && waiting > 0 && now - oldest >= STARVED_POLLS * pollNanos) {
            starved = true;
            Duration waited = Duration.ofNanos(now - oldest);
            log.error("Engine {} processes nothing: {} of its {} workers got no connection from the DataSource for {}"
                    + " ms. The engine needs {} connections at once (workers, listener, client), more when the pool"
                    + " is shared; raise the pool's size, lower workers, or look for connections held elsewhere",
                    engineId, waiting, workers.size(), waited.toMillis(), needed);
            listeners.connectionsStarved(waited);
        } else if (starved && waiting == 0) {
            starved = false;
            log.info("Engine {}: its workers get connections again", engineId);
            listeners.connectionsAvailable();
        }
    }
}
