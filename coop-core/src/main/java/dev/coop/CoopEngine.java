package dev.coop;

import dev.coop.failure.CoopValidationException;

import com.zaxxer.hikari.HikariDataSource;
import dev.coop.internal.runtime.EngineRuntime;
import dev.coop.internal.store.Json;
import dev.coop.internal.store.SchemaName;
import dev.coop.internal.store.Time;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * Runs sagas: claims runnable runs from PostgreSQL and executes their steps, each in its own transaction. Any number
 * of engines may share one database; a step commits at most once. Build one with {@link Coop#engine(DataSource)};
 * close it to stop.
 */
public final class CoopEngine implements AutoCloseable {
    private final String id;
    private final EngineRuntime runtime;
    private final CoopClient client;
    private final Duration shutdownTimeout;
    private boolean closed;

    private CoopEngine(String id, EngineRuntime runtime, CoopClient client, Duration shutdownTimeout) {
        this.id = id;
        this.runtime = runtime;
        this.client = client;
        this.shutdownTimeout = shutdownTimeout;
    }

    /** This engine instance's id, as written in the event log's {@code engine} column. */
    public String id() {
        return id;
    }

    /** A client on the same database and schema, woken directly by this engine's progress. */
    public CoopClient client() {
        return client;
    }

    /**
     * Whether this engine listens for notifications: as {@link Builder#notifications(boolean)} said (default on),
     * never on a Citus database, where it polls ({@link Builder#pollInterval(Duration)}).
     */
    public boolean listens() {
        return runtime.listens();
    }

    /**
     * How often this engine looks for work it was not told about: as {@link Builder#pollInterval(Duration)} said, by
     * default {@link Coop#DEFAULT_POLL_INTERVAL}, or {@link Coop#DEFAULT_CITUS_POLL_INTERVAL} on a Citus database.
     */
    public Duration pollInterval() {
        return runtime.pollInterval();
    }

    /** Stops claiming, waits for steps in flight (up to the shutdown timeout), and releases its threads. */
    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            runtime.stop(shutdownTimeout);
        }
    }

    /**
     * Settings of an engine. Each is validated as it is set; nothing can change after {@link #start()}. Besides its
     * own, an engine has the {@linkplain ClientSettings settings of a client}, which it applies to itself and to its
     * {@link CoopEngine#client() client}.
     */
    public static final class Builder extends ClientSettings<Builder> {
        private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,62}");

        private final Map<String, Saga<?>> sagas = new LinkedHashMap<>();
        private String name = "coop";
        private int workers = Coop.DEFAULT_WORKERS;
        private int maxRunsPerTransaction = Coop.DEFAULT_MAX_RUNS_PER_TRANSACTION;
        /** Null: {@link Coop#DEFAULT_POLL_INTERVAL}, or {@link Coop#DEFAULT_CITUS_POLL_INTERVAL} on Citus. */
        private Duration pollInterval;
        /** Null: on, except on Citus. */
        private Boolean notifications;
        private boolean schedules = true;
        private Duration shutdownTimeout = Coop.DEFAULT_SHUTDOWN_TIMEOUT;
        private Duration retention;
        private Duration idleInTransactionTimeout = Coop.DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT;
        /** HikariCP's maximumPoolSize when none is set. */
        private static final int HIKARI_DEFAULT_POOL_SIZE = 10;
        /** How long {@link #start()} waits for the connections it needs from a pool whose size it cannot read. */
        private static final Duration POOL_CHECK_TIMEOUT = Duration.ofSeconds(5);
        private CooperationStrategy strategy = Strategies.standard();

        Builder(DataSource dataSource) {
            super(dataSource);
        }

        /**
         * Adds sagas this engine runs. Saga names are unique, except that several versions of one saga may be
         * registered (the old one beside the new one, to drain its runs; see {@link Saga.Builder#version(int)}); the
         * versions of a saga handle the same topic.
         */
        public Builder register(Saga<?>... sagas) {
            for (Saga<?> saga : sagas) {
                Objects.requireNonNull(saga, "saga");
                for (Saga<?> other : this.sagas.values()) {
                    if (other.name().equals(saga.name()) && other.version() == saga.version()) {
                        throw new CoopValidationException("Two sagas are named '" + saga.name() + "'"
                                + (saga.version() == 1 ? "" : " with version " + saga.version())
                                + "; saga names must be unique (several versions of one saga are allowed)");
                    }
                    if (other.name().equals(saga.name()) && !other.topic().name().equals(saga.topic().name())) {
                        throw new CoopValidationException("Versions " + other.version() + " and " + saga.version()
                                + " of saga '" + saga.name() + "' handle different topics ('"
                                + other.topic().name() + "', '" + saga.topic().name()
                                + "'); a saga name is bound to one topic");
                    }
                }
                this.sagas.put(dev.coop.internal.EngineSagas.key(saga.name(), saga.version()), saga);
            }
            return this;
        }

        /** A readable name for this engine (default "coop"); its id is the name plus a random suffix. */
        public Builder name(String name) {
            if (name == null || !NAME.matcher(name).matches()) {
                throw new CoopValidationException("Invalid engine name '" + name
                        + "': use 1 to 63 letters, digits, '.', '_' or '-'");
            }
            this.name = name;
            return this;
        }

        /** How many steps this engine executes at once, each on its own connection (default 8). */
        public Builder workers(int workers) {
            if (workers < 1 || workers > 1024) {
                throw new CoopValidationException("workers must be between 1 and 1024, was " + workers);
            }
            this.workers = workers;
            return this;
        }

        /**
         * At most how many runs of one saga a worker advances in one transaction (default
         * {@value Coop#DEFAULT_MAX_RUNS_PER_TRANSACTION}; 1: one run per transaction). When more runs of a saga are due
         * than the engine has idle workers, a worker claims several of them at once, executes one step of each (one
         * after another, each behind its own savepoint: a step that fails rolls back alone and fails only its run),
         * and commits them together; a run never advances more than one step per transaction. How many follows the
         * backlog: a run due alone goes alone, at once. Between 1 and 64.
         */
        public Builder maxRunsPerTransaction(int runs) {
            if (runs < 1 || runs > 64) {
                throw new CoopValidationException("maxRunsPerTransaction must be between 1 and 64, was " + runs);
            }
            this.maxRunsPerTransaction = runs;
            return this;
        }

        /**
         * How often an engine looks for work it was not told about (default 1 s; on a Citus database 100 ms, where
         * notifications cannot reach engines). With notifications off, this is the pickup latency.
         */
        public Builder pollInterval(Duration interval) {
            if (interval == null || interval.compareTo(Duration.ofMillis(10)) < 0
                    || interval.compareTo(Duration.ofHours(1)) > 0) {
                throw new CoopValidationException(
                        "pollInterval must be between 10 ms and 1 hour, was " + interval);
            }
            this.pollInterval = interval;
            return this;
        }

        /**
         * Whether to LISTEN for wake-ups on a dedicated connection (default true). Turn off behind PgBouncer in
         * transaction pooling mode; the engine then relies on polling alone. On a Citus database they are always off
         * (a worker's notification never reaches the coordinator's listeners; docs/guide/citus.md): asking for them
         * there logs a warning.
         */
        public Builder notifications(boolean enabled) {
            this.notifications = enabled;
            return this;
        }

        /**
         * The {@code idle_in_transaction_session_timeout} each step's transaction sets on the server (default
         * {@link Coop#DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT}; {@link Duration#ZERO}: the server's own): when a
         * transaction stays idle that long (the engine died, or the network between them failed), the server ends the
         * session and releases the run's lock, so that another engine can run the step. It must be longer than the
         * longest time a step keeps its transaction idle, such as a step waiting for a slow HTTP call: a step that
         * exceeds it loses its transaction and is retried as database trouble. Set in the claim's statement.
         */
        public Builder idleInTransactionTimeout(Duration timeout) {
            if (timeout == null || timeout.isNegative() || !timeout.isZero()
                    && (timeout.compareTo(Duration.ofSeconds(1)) < 0 || timeout.compareTo(Duration.ofDays(1)) > 0)) {
                throw new CoopValidationException("idleInTransactionTimeout must be zero (the server's) or between"
                        + " 1 second and 1 day, was " + timeout);
            }
            this.idleInTransactionTimeout = timeout;
            return this;
        }

        /**
         * Whether this engine fires due schedules (default true). Any number of engines may: each period fires once.
         */
        public Builder schedules(boolean enabled) {
            this.schedules = enabled;
            return this;
        }

        /**
         * Deletes finished hierarchies once every run of their root message finished longer than {@code keep} ago
         * (default: none is ever deleted). Deleted whole, root by root, in small batches, by a thread of this engine
         * (engines sharing a schema share the work); a hierarchy with anything runnable, sleeping, waiting or parked
         * is never touched. See {@link CoopClient#prune(Duration)} for what goes.
         */
        public Builder retention(Duration keep) {
            if (keep == null || keep.isNegative() || keep.isZero()) {
                throw new CoopValidationException("retention must be a positive duration, was " + keep);
            }
            if (keep.compareTo(Duration.ofDays(365L * 1000)) > 0) {
                throw new CoopValidationException("retention must be at most 1000 years, was " + keep);
            }
            this.retention = keep;
            return this;
        }

        /** How long {@link CoopEngine#close()} waits for steps in flight (default 30 s). */
        public Builder shutdownTimeout(Duration timeout) {
            if (timeout == null || timeout.isNegative()) {
                throw new CoopValidationException("shutdownTimeout must be zero or positive, was " + timeout);
            }
            this.shutdownTimeout = timeout;
            return this;
        }

        /**
         * The strategy for the five decisions of the event loop, for sagas that do not set their own (default:
         * {@link Strategies#standard()}).
         */
        public Builder strategy(CooperationStrategy strategy) {
            this.strategy = Objects.requireNonNull(strategy, "strategy");
            return this;
        }

        /** Migrates (unless turned off), registers the sagas, and starts the threads. */
        public CoopEngine start() {
            if (sagas.isEmpty()) {
                throw new CoopValidationException(
                        "An engine needs at least one saga; to only launch and inspect,"
                                + " use Coop.client(dataSource)");
            }
            SchemaName schema = migratedSchema();
            boolean listening = notificationsOn(schema);
            Duration poll = pollInterval != null
                    ? pollInterval
                    : schema.citus()
                            ? Coop.DEFAULT_CITUS_POLL_INTERVAL
                            : Coop.DEFAULT_POLL_INTERVAL;
            checkPoolSize(listening);
            String id = name + "-" + UUID.randomUUID().toString().substring(0, 8);
            Json json = json();
            Time time = time();
            EngineRuntime runtime = new EngineRuntime(
                    new EngineRuntime.Config(id, name, dataSource(), schema, json,
                            new dev.coop.internal.EngineSagas(sagas.values()), workers, poll, listening,
                            strategy, schedules,
                            requiresHandlers(), retention, time, listeners(), databaseTimeoutValue(),
                            idleInTransactionTimeout, maxRunsPerTransaction));
            runtime.start();
            CoopClient client = new CoopClient(boundedDataSource(), schema, json, runtime.completions(),
                    runtime::wake, true, requiresHandlers(), time,
                    java.util.Set.copyOf(sagas.keySet()), // <saga>@<version>
                    listeners());
            return new CoopEngine(id, runtime, client, shutdownTimeout);
        }

        /** Whether the engine listens: as asked (default on), never on Citus. */
        private boolean notificationsOn(SchemaName schema) {
            if (!schema.citus()) {
                return notifications == null || notifications;
            }
            if (Boolean.TRUE.equals(notifications)) {
                org.slf4j.LoggerFactory.getLogger(CoopEngine.class).warn("Notifications are off on Citus (schema '{}'):"
                        + " a worker's notification never reaches the coordinator's listeners; engines poll every"
                        + " pollInterval instead (docs/guide/citus.md)", schema.value());
            }
            return false;
        }

        private void checkPoolSize(boolean listening) {
            int needed = workers + (listening ? 1 : 0) + 1;
            HikariDataSource hikari = hikari(dataSource());
            if (hikari == null) { // another pool, or one behind a wrapper: take what the engine needs, briefly
                dev.coop.internal.runtime.PoolCheck.require(dataSource(), needed, workers + " workers"
                        + (listening ? " + 1 listener" : "") + " + 1 for clients", POOL_CHECK_TIMEOUT);
                return;
            }
            // a pool built with setters and not started yet (as Spring Boot builds it) reports -1: HikariCP then
            // takes its default of 10 when it starts
            int allowed = hikari.getMaximumPoolSize() > 0 ? hikari.getMaximumPoolSize() : HIKARI_DEFAULT_POOL_SIZE;
            if (allowed < needed) {
                throw new CoopValidationException("Connection pool '" + hikari.getPoolName() + "' allows "
                        + allowed + " connections; this engine needs at least " + needed + " (" + workers
                        + " workers" + (listening ? " + 1 listener" : "")
                        + " + 1 for clients). Raise maximumPoolSize or lower workers");
            }
        }

        /** The HikariCP pool behind {@code dataSource}, also behind wrappers that unwrap to it; else null. */
        private static HikariDataSource hikari(DataSource dataSource) {
            if (dataSource instanceof HikariDataSource hikari) {
                return hikari;
            }
            try {
                return dataSource.isWrapperFor(HikariDataSource.class)
                        ? dataSource.unwrap(HikariDataSource.class)
                        : null;
            } catch (java.sql.SQLException | RuntimeException e) {
                return null;
            }
        }
    }
}
