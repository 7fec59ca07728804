package dev.coop;

import dev.coop.failure.CoopValidationException;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.datatype.jsr310.JavaTimeModule;
import java.time.Duration;
import javax.sql.DataSource;

/** The entry point: an engine that runs sagas, and a client that launches and inspects. */
public final class Coop {
    /** The schema Coop's tables live in unless configured otherwise. */
    public static final String DEFAULT_SCHEMA = "coop";
    /** Steps an engine executes at once, each holding one connection. */
    public static final int DEFAULT_WORKERS = 8;
    /**
     * At most how many runs of one saga a worker advances by one step each in one transaction when that many are due
     * (see {@link CoopEngine.Builder#maxRunsPerTransaction(int)}).
     */
    public static final int DEFAULT_MAX_RUNS_PER_TRANSACTION = 8;
    /** How often an engine looks for work it was not notified of. */
    public static final Duration DEFAULT_POLL_INTERVAL = Duration.ofSeconds(1);
    /**
     * How often an engine polls on a Citus database unless told otherwise: notifications cannot reach it there
     * (docs/guide/citus.md), so polling is its only wake-up.
     */
    public static final Duration DEFAULT_CITUS_POLL_INTERVAL = Duration.ofMillis(100);
    /** How long closing an engine waits for steps in flight. */
    public static final Duration DEFAULT_SHUTDOWN_TIMEOUT = Duration.ofSeconds(30);
    /**
     * How long Coop's own statements (claims, advances, commits, probes, the listener's check, a client's launch) may
     * wait for the database before they fail as database trouble; user statements in steps are not bounded by it.
     */
    public static final Duration DEFAULT_DATABASE_TIMEOUT = Duration.ofSeconds(30);
    /**
     * How long a step's transaction may stay idle on the server (between the step's statements, or after a dead engine
     * sent its last) before the server ends it and releases its locks. Longer than any step should take.
     */
    public static final Duration DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT = Duration.ofMinutes(10);
    /** The largest payload accepted, in bytes of JSON. */
    public static final int DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024;

    private Coop() {
    }

    /**
     * A new instance of the JSON mapper Coop uses when none is configured: Java time types as ISO-8601 text, unknown
     * properties ignored. Start from it to configure your own.
     */
    public static ObjectMapper defaultObjectMapper() {
        return JsonMapper.builder()
                .addModule(new JavaTimeModule())
                .disable(SerializationFeature.WRITE_DATES_AS_TIMESTAMPS)
                .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
                .build();
    }

    /** Configures an engine on {@code dataSource}; register sagas, then {@code start()}. */
    public static CoopEngine.Builder engine(DataSource dataSource) {
        return new CoopEngine.Builder(dataSource);
    }

    /** A client with every default (schema {@value #DEFAULT_SCHEMA}, migrations applied). */
    public static CoopClient client(DataSource dataSource) {
        return CoopClient.builder(dataSource).build();
    }

    /**
     * The SQL of every schema migration for {@code schema}, for teams that apply migrations themselves (then start
     * engines and clients with {@code migrate(false)}).
     */
    public static String migrationSql(String schema) {
        return dev.coop.internal.store.Migrations.script(new dev.coop.internal.store.SchemaName(schema));
    }

    /** A database timeout: zero (none) or between 100 ms and 1 hour. */
    static Duration checkDatabaseTimeout(Duration timeout) {
        if (timeout == null || timeout.isNegative()
                || !timeout.isZero() && (timeout.compareTo(Duration.ofMillis(100)) < 0
                        || timeout.compareTo(Duration.ofHours(1)) > 0)) {
            throw new CoopValidationException(
                    "databaseTimeout must be zero (none) or between 100 ms and 1 hour, was " + timeout);
        }
        return timeout;
    }

    static int checkPayloadLimit(int bytes) {
        if (bytes < 2 || bytes > 64 * 1024 * 1024) {
            throw new CoopValidationException("maxPayloadBytes must be between 2 and 64 MiB, was " + bytes);
        }
        return bytes;
    }
}
