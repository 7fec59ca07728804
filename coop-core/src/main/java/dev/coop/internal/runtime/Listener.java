package dev.coop.internal.runtime;

import dev.coop.internal.Listeners;
import dev.coop.internal.guard.NetworkTimeouts;
import dev.coop.internal.join.JoinTimer;
import dev.coop.internal.schedule.ScheduleTimer;
import dev.coop.internal.step.Dispatcher;
import dev.coop.internal.store.SchemaName;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Holds one dedicated connection that LISTENs on the schema's channel and wakes the dispatcher for each saga
 * named in a notification. Reconnects with backoff after losing its connection, then asks for a probe because
 * notifications may have been missed meanwhile. A connection that silently died (a network partition, a server
 * restarted meanwhile) delivers nothing and says nothing, so the listener verifies it once per poll interval (at
 * least every second) with a statement bounded by the engine's database timeout, and reconnects when it fails.
 */
final class Listener implements Runnable {
    private static final Logger log = LoggerFactory.getLogger(Listener.class);
    private static final int WAIT_MILLIS = 250;

    private final DataSource dataSource;
    private final SchemaName schema;
    private final Dispatcher dispatcher;
    private final String engineId;
    private final Consumer<String> wake;
    private final Listeners listeners;

    /** Whether a time source decides (not the database's clock): delays in notifications are then only hints. */
    private final boolean timeControlled;
    private final int timeoutMillis;
    private final long verifyNanos;

    /**
     * @param wake receives each notification's payload: a saga name, or the schedule timer's nudge
     * @param timeoutMillis how long the verification may wait for the database (0: no bound)
     * @param pollMillis the engine's poll interval: how often the connection is verified (at least every second)
     */
    Listener(DataSource dataSource, SchemaName schema, Dispatcher dispatcher, String engineId,
            Consumer<String> wake, boolean timeControlled, Listeners listeners, int timeoutMillis, long pollMillis) {
        this.timeControlled = timeControlled;
        this.timeoutMillis = timeoutMillis;
        this.verifyNanos = TimeUnit.MILLISECONDS.toNanos(Math.max(10, Math.min(pollMillis, 1_000)));
        this.dataSource = dataSource;
        this.schema = schema;
        this.dispatcher = dispatcher;
        this.engineId = engineId;
        this.wake = wake;
        this.listeners = listeners;
    }

    @Override
    public void run() {
        long backoff = 50;
        while (!dispatcher.stopped()) {
            try (Connection c = dataSource.getConnection()) {
                subscribe(c);
                backoff = 50;
                listeners.notificationsConnected();
                receive(c);
                try (Statement st = c.createStatement()) {
                    st.execute("UNLISTEN *"); // the connection goes back to a pool: leave it as we found it
                }
            } catch (Throwable e) { // an Error too: the listener lives on
                if (dispatcher.stopped() || !pauseAfter(e, backoff)) {
                    return;
                }
                backoff = Math.min(backoff * 2, 5_000);
            }
        }
    }

    /** LISTENs on the connection, then asks for what may have been missed while it was not listening. */
    private void subscribe(Connection c) throws SQLException {
        NetworkTimeouts.bound(c, timeoutMillis); // the pool restores its own (HikariCP does)
        c.setAutoCommit(true);
        try (Statement st = c.createStatement()) {
            st.execute("LISTEN " + schema.channel());
        }
        dispatcher.probeNow(); // anything that happened while we were not listening
        wake.accept(ScheduleTimer.NOTIFICATION); // schedules too
        wake.accept(JoinTimer.NOTIFICATION); // and join timeouts
    }

    /** Hands on notifications until the engine stops, verifying the connection once per interval. */
    private void receive(Connection c) throws SQLException {
        PGConnection pg = c.unwrap(PGConnection.class);
        long verified = System.nanoTime();
        while (!dispatcher.stopped()) {
            if (System.nanoTime() - verified >= verifyNanos) {
                verify(c, schema.channel());
                verified = System.nanoTime();
            }
            PGNotification[] notifications = pg.getNotifications(WAIT_MILLIS);
            if (notifications != null) {
                for (PGNotification n : notifications) {
                    notified(n.getParameter());
                }
            }
        }
    }

    /** Says the connection was lost and waits {@code backoff} ms before reconnecting; false when interrupted. */
    private boolean pauseAfter(Throwable e, long backoff) {
        listeners.notificationsLost(e);
        log.warn("Engine {} lost its notification connection ({}); reconnecting in {} ms, polling meanwhile",
                engineId, e.toString(), backoff, e instanceof Error ? e : null);
        try {
            dispatcher.pause(TimeUnit.MILLISECONDS.toNanos(backoff));
            return true;
        } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /**
     * A round trip on the listening connection, bounded by the network timeout: fails when the connection is dead. It
     * is the LISTEN again (a no-op on a channel already listened to), so the session still shows as the listener's.
     */
    private static void verify(Connection c, String channel) throws SQLException {
        try (Statement st = c.createStatement()) {
            st.execute("LISTEN " + channel);
        }
    }

    /** A payload is a saga name (a run is due now), or a saga name and the milliseconds until a run is due. */
    private void notified(String payload) {
        int space = payload.lastIndexOf(' ');
        if (space < 0) {
            wake.accept(payload);
            if (timeControlled && !payload.startsWith("#")) {
                dispatcher.probeNow(); // "due now" by the database's clock may be later by the engine's
            }
            return;
        }
        try {
            long millis = Long.parseLong(payload.substring(space + 1));
            if (timeControlled) {
                // the delay was measured with the database's clock, not the engine's: let a probe measure it
                dispatcher.probeNow();
                return;
            }
            dispatcher.dueIn(millis);
        } catch (NumberFormatException e) {
            wake.accept(payload); // not ours to parse: treat as a wake-up
        }
    }
}
