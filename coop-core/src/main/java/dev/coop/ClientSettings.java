package dev.coop;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.coop.failure.CoopValidationException;
import dev.coop.internal.Listeners;
import dev.coop.internal.guard.NetworkTimeouts;
import dev.coop.internal.store.Json;
import dev.coop.internal.store.Migrations;
import dev.coop.internal.store.SchemaName;
import dev.coop.internal.store.Time;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * The settings of a client, which an engine's builder has too (every engine has a client, and applies them to both):
 * where Coop's tables are, how payloads become JSON, and how launches, time and the database are watched. Each is
 * written, documented and validated here once; {@link CoopClient.Builder} and {@link CoopEngine.Builder} inherit
 * them, and each setter returns the builder it was called on. Package-private: not a concept of its own.
 *
 * @param <B> the builder that inherits these settings
 */
abstract class ClientSettings<B extends ClientSettings<B>> {
    private final DataSource dataSource;
    private String schema = Coop.DEFAULT_SCHEMA;
    private ObjectMapper objectMapper;
    private final List<String> polymorphicPrefixes = new ArrayList<>();
    private int maxPayloadBytes = Coop.DEFAULT_MAX_PAYLOAD_BYTES;
    private boolean migrate = true;
    private boolean requireHandlers;
    private final List<EngineListener> listeners = new ArrayList<>();
    private TimeSource clock;
    private Duration databaseTimeout = Coop.DEFAULT_DATABASE_TIMEOUT;

    ClientSettings(DataSource dataSource) {
        this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    }

    /** The PostgreSQL schema of Coop's tables (default {@value Coop#DEFAULT_SCHEMA}). */
    public B schema(String schema) {
        this.schema = new SchemaName(schema).value();
        return self();
    }

    /** The Jackson mapper for payloads (default: java.time support, unknown properties ignored). */
    public B objectMapper(ObjectMapper objectMapper) {
        this.objectMapper = Objects.requireNonNull(objectMapper, "objectMapper");
        return self();
    }

    /**
     * Packages (or class name prefixes, e.g. {@code "com.acme.orders."}) whose classes payloads may name as their
     * type ({@code @JsonTypeInfo(use = Id.CLASS)}). By default none: a type id naming a class is refused, so that
     * no producer can make Coop instantiate an arbitrary class. Type ids by name ({@code Id.NAME} with
     * {@code @JsonSubTypes}) need nothing here. Ignored when your mapper has a validator of its own.
     */
    public B allowPolymorphicTypes(String... prefixes) {
        for (String prefix : prefixes) {
            if (prefix == null || prefix.isBlank()) {
                throw new CoopValidationException("A polymorphic type prefix cannot be empty: it would allow"
                        + " every class");
            }
            polymorphicPrefixes.add(prefix);
        }
        return self();
    }

    /** The largest payload accepted, in bytes of JSON (default 1 MiB). */
    public B maxPayloadBytes(int bytes) {
        this.maxPayloadBytes = Coop.checkPayloadLimit(bytes);
        return self();
    }

    /**
     * Whether to apply schema migrations when a client is built or an engine starts (default true). Off for teams
     * that run them themselves.
     */
    public B migrate(boolean migrate) {
        this.migrate = migrate;
        return self();
    }

    /**
     * Whether launching a message on a topic that no saga is registered for fails with a
     * {@link CoopValidationException}: a client's launch, or a step of an engine (or its client) that launches one
     * (default false: the message is stored, nothing handles it, and a warning is logged once per topic). A misspelt
     * topic then fails at once instead of vanishing.
     */
    public B requireHandlers(boolean requireHandlers) {
        this.requireHandlers = requireHandlers;
        return self();
    }

    /**
     * Adds a listener told of launches and, on an engine, of steps, claims and retries (metrics, traces); listeners
     * are called in the order added. An engine's {@link CoopEngine#client() client} reports its launches to the
     * engine's listeners.
     */
    public B listener(EngineListener listener) {
        listeners.add(Objects.requireNonNull(listener, "listener"));
        return self();
    }

    /**
     * Where the time is read for due times, sleeps, retries, deadlines, barrier timers, schedules, delayed launches,
     * join timeouts and operator actions (default: the database's clock, read by the statements themselves). Every
     * engine and client of a schema must use the same source; see {@link TimeSource}. An engine's
     * {@link CoopEngine#client() client} uses the engine's.
     */
    public B clock(TimeSource clock) {
        this.clock = Objects.requireNonNull(clock, "clock");
        return self();
    }

    /**
     * How long each statement may wait for the database on a connection taken from the {@code DataSource} (default
     * {@link Coop#DEFAULT_DATABASE_TIMEOUT}; {@link Duration#ZERO}: no bound), as a socket read timeout. A client's
     * launch, await or operator action on a dead connection then fails within that time with a
     * {@link dev.coop.failure.CoopStoreException} that says so, instead of hanging. An engine bounds with it the
     * connections it uses for claims, advances, commits and probes, and its listener's connection (verified once
     * per poll interval), and its client's launches: a statement of the engine that times out is database trouble
     * (retried, never a step failure). It bounds neither user statements in steps (they run under the connection's
     * own settings), nor statements on a connection you pass in (a launch in your transaction), nor taking a
     * connection from the pool (the pool's own timeout).
     */
    public B databaseTimeout(Duration timeout) {
        this.databaseTimeout = Coop.checkDatabaseTimeout(timeout);
        return self();
    }

    @SuppressWarnings("unchecked")
    private B self() {
        return (B) this;
    }

    /** The data source as given: the engine's own connections (claims, listener) are taken from it. */
    final DataSource dataSource() {
        return dataSource;
    }

    /** The data source whose connections are bounded by {@link #databaseTimeout(Duration)}, for a client. */
    final DataSource boundedDataSource() {
        return NetworkTimeouts.bounding(dataSource, (int) databaseTimeout.toMillis());
    }

    /**
     * The schema, migrated first unless {@link #migrate(boolean)} is off, and then as its statements are written on
     * Citus when the database has it (its {@code {now}}, its claim). Only a migrating builder asks: one that does not
     * (the command line, a read-only client) connects on first use, where its own errors say what failed, and keeps
     * plain PostgreSQL's statements (Citus is work in progress: docs/guide/citus.md).
     */
    final SchemaName migratedSchema() {
        SchemaName name = new SchemaName(schema);
        if (migrate) {
            Migrations.apply(dataSource, name);
            return dev.coop.internal.store.CitusLayout.layoutOf(dataSource, name);
        }
        // a schema migrated by the team itself (Coop.migrationSql has no layout) is distributed or not: read which;
        // a database that cannot be reached or entered yet (08: connection, 28: authorization, 3D: no such database)
        // fails later, at the first statement, with that statement's error
        try {
            return dev.coop.internal.store.CitusLayout.layoutOf(dataSource, name);
        } catch (dev.coop.failure.CoopStoreException e) {
            if (e.getCause() instanceof java.sql.SQLException sql && sql.getSQLState() != null
                    && java.util.List.of("08", "28", "3D").contains(sql.getSQLState().substring(0, 2))) {
                return name;
            }
            throw e;
        }
    }

    /** How payloads become JSON: the mapper, the allowed polymorphic types and the payload limit. */
    final Json json() {
        return new Json(objectMapper == null ? Json.defaultMapper() : objectMapper, maxPayloadBytes,
                List.copyOf(polymorphicPrefixes));
    }

    final Time time() {
        return Time.of(clock);
    }

    final Listeners listeners() {
        return listeners.isEmpty() ? Listeners.NONE : new Listeners(listeners);
    }

    final boolean requiresHandlers() {
        return requireHandlers;
    }

    final Duration databaseTimeoutValue() {
        return databaseTimeout;
    }
}
