package dev.coop.internal.runtime;

import dev.coop.internal.store.SchemaName;

import dev.coop.Saga;

import dev.coop.failure.CoopValidationException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;

/**
 * The topology registry in PostgreSQL: which saga handles which topic. An emitting step waits for every saga
 * registered for the topic at the moment it emits, wherever that saga's engines run, even when they are all down.
 */
public final class Topology {
    private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(Topology.class);
    /** Registers a saga (its topic, and the highest version) and one version of it; no row: another topic. */
    private static final String REGISTER = """
            WITH reg AS (
              INSERT INTO {schema}.saga_registration (saga, topic, last_engine, version) VALUES (?, ?, ?, ?)
              ON CONFLICT (saga) DO UPDATE SET last_engine = EXCLUDED.last_engine, last_seen_at = EXCLUDED.last_seen_at,
                 version = greatest(saga_registration.version, EXCLUDED.version)
               WHERE saga_registration.topic = EXCLUDED.topic
              RETURNING topic, version
            ), ver AS (
              INSERT INTO {schema}.saga_version (saga, version, last_engine, first_step, compensating_steps)
              SELECT ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM reg)
              ON CONFLICT (saga, version) DO UPDATE SET last_engine = EXCLUDED.last_engine,
                 last_seen_at = EXCLUDED.last_seen_at, first_step = EXCLUDED.first_step,
                 compensating_steps = EXCLUDED.compensating_steps
            )
            SELECT topic, version FROM reg
            """;

    private static final String LOCK_VERSION = """
            SELECT 1 FROM {schema}.saga_registration reg
              JOIN {schema}.saga_version v ON v.saga = reg.saga AND v.version = ?
             WHERE reg.saga = ? FOR UPDATE OF reg, v
            """;

    /** Deletes a version; the saga then gets its highest version left, or goes with its last one. */
    private static final String RETIRE_VERSION = """
            WITH gone AS (
              DELETE FROM {schema}.saga_version WHERE saga = ? AND version = ? RETURNING saga
            ), latest AS (
              SELECT max(v.version) AS version FROM {schema}.saga_version v
               WHERE v.saga = ? AND v.version <> ? AND EXISTS (SELECT 1 FROM gone)
            ), moved AS (
              UPDATE {schema}.saga_registration reg SET version = latest.version FROM latest
               WHERE reg.saga = ? AND latest.version IS NOT NULL
            )
            DELETE FROM {schema}.saga_registration reg USING latest
             WHERE reg.saga = ? AND latest.version IS NULL AND EXISTS (SELECT 1 FROM gone)
            """;

    private final SchemaName schema;

    public Topology(SchemaName schema) {
        this.schema = schema;
    }

    /**
     * Records that {@code engine} runs these saga versions: each saga's topic, and each version (kept until it is
     * retired). New runs of a saga get its highest registered version. A saga name registered for another topic is
     * refused: retire it first.
     */
    public void register(Connection c, String engine, java.util.Collection<Saga<?>> sagas) throws SQLException {
        String upsert = schema.sql(REGISTER);
        List<Saga<?>> ordered = sagas.stream() // one order for every engine: no deadlock between two starting
                .sorted(java.util.Comparator.comparing((Saga<?> s) -> s.name()).thenComparing(Saga::version))
                .toList();
        for (Saga<?> saga : ordered) {
            int current = register(c, upsert, engine, saga);
            if (current > saga.version() && saga == newest(ordered, saga.name())) {
                log.info("Engine {} has versions up to {} of saga '{}', but new runs of it get version {}"
                        + " (registered by another engine): this engine runs only the runs of its versions",
                        engine, saga.version(), saga.name(), current);
            }
        }
    }

    /** Registers one saga version; returns the version new runs of the saga get. */
    private int register(Connection c, String upsert, String engine, Saga<?> saga) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(upsert)) {
            ps.setString(1, saga.name());
            ps.setString(2, saga.topic().name());
            ps.setString(3, engine);
            ps.setInt(4, saga.version());
            ps.setString(5, saga.name());
            ps.setInt(6, saga.version());
            ps.setString(7, engine);
            ps.setString(8, saga.steps().getFirst().name()); // inspection names a run's running first step
            ps.setArray(9, c.createArrayOf("text", compensatingSteps(saga))); // and leaves out empty rollbacks
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    throw new CoopValidationException("Saga '" + saga.name()
                            + "' is registered for topic '"
                            + topicOf(c, saga.name()) + "' in schema '" + schema.value()
                            + "', not for topic '"
                            + saga.topic().name()
                            + "'; retire it first (CoopClient.retireSaga) or choose another saga name");
                }
                return rs.getInt(2);
            }
        }
    }

    /**
     * The saga's steps whose rollback runs code of theirs, a compensation or a finally part: inspection leaves the
     * {@code Rollback of <step>} rows of the others out of trees.
     */
    private static String[] compensatingSteps(Saga<?> saga) {
        return saga.steps().stream().filter(s -> s.compensation() != null || s.finallyBody() != null)
                .map(Saga.Step::name).distinct().toArray(String[]::new);
    }

    private static Saga<?> newest(List<Saga<?>> ordered, String name) {
        return ordered.stream().filter(s -> s.name().equals(name)).toList().getLast();
    }

    private String topicOf(Connection c, String saga) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                schema.sql("SELECT topic FROM {schema}.saga_registration WHERE saga = ?"))) {
            ps.setString(1, saga);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : "?";
            }
        }
    }

    /** Removes a saga, every version of it, from the registry: messages emitted from now on no longer wait for it. */
    public boolean retire(Connection c, String saga) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                WITH versions AS (DELETE FROM {schema}.saga_version WHERE saga = ?)
                DELETE FROM {schema}.saga_registration WHERE saga = ?
                """))) {
            ps.setString(1, saga);
            ps.setString(2, saga);
            return ps.executeUpdate() > 0;
        }
    }

    /**
     * Removes one version of a saga from the registry, in the caller's transaction; refused (with how many runs, by
     * status) while runs of that version are unfinished, because only engines that have the version can finish them.
     * New runs get the highest version left; retiring the last version retires the saga.
     *
     * @return false when that version of the saga is not registered
     */
    public boolean retireVersion(Connection c, String saga, int version) throws SQLException {
        if (!lockVersion(c, saga, version)) {
            return false;
        }
        String unfinished = unfinished(c, saga, version);
        if (unfinished != null) {
            throw new CoopValidationException("Cannot retire version " + version + " of saga '" + saga + "' in schema '"
                    + schema.value() + "': " + unfinished + "; only an engine that has version " + version
                    + " can finish them (keep one running until they finished, then retire the version)");
        }
        try (PreparedStatement ps = c.prepareStatement(schema.sql(RETIRE_VERSION))) {
            ps.setString(1, saga);
            ps.setInt(2, version);
            ps.setString(3, saga);
            ps.setInt(4, version);
            ps.setString(5, saga);
            ps.setString(6, saga);
            ps.executeUpdate();
        }
        return true;
    }

    /** Locks the registration of the saga and of the version; false when that version is not registered. */
    private boolean lockVersion(Connection c, String saga, int version) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(LOCK_VERSION))) {
            ps.setInt(1, version);
            ps.setString(2, saga);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next();
            }
        }
    }

    /** "3 unfinished runs (2 runnable, 1 parked; 1 of them rolling back)", or null when there is none. */
    private String unfinished(Connection c, String saga, int version) throws SQLException {
        java.util.Map<String, Integer> byStatus = new java.util.TreeMap<>();
        int total = 0;
        int rollingBack = 0;
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                SELECT CASE WHEN status = 'RUNNABLE' AND pending_children > 0 THEN 'WAITING' ELSE status END,
                       count(*)::int, count(*) FILTER (WHERE phase = 'ROLLBACK')::int
                  FROM {schema}.run
                 WHERE saga = ? AND saga_version = ? AND status IN ('RUNNABLE', 'WAITING', 'PARKED')
                 GROUP BY 1
                """))) {
            ps.setString(1, saga);
            ps.setInt(2, version);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    byStatus.put(rs.getString(1).toLowerCase(java.util.Locale.ROOT), rs.getInt(2));
                    total += rs.getInt(2);
                    rollingBack += rs.getInt(3);
                }
            }
        }
        if (total == 0) {
            return null;
        }
        List<String> parts = new java.util.ArrayList<>();
        byStatus.forEach((status, n) -> parts.add(n + " " + status));
        return total + (total == 1 ? " unfinished run" : " unfinished runs") + " (" + String.join(", ", parts)
                + (rollingBack == 0 ? "" : "; " + rollingBack + " of them rolling back") + ")";
    }

    /**
     * Every registered saga version, and every version that has unfinished runs without being registered, by saga
     * and version: the registry joined with one aggregate over the unfinished runs.
     */
    public List<dev.coop.inspect.SagaVersionSummary> versions(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                WITH active AS (
                  SELECT saga, saga_version AS version, count(*) AS unfinished FROM {schema}.run
                   WHERE status IN ('RUNNABLE', 'WAITING', 'PARKED') GROUP BY saga, saga_version
                ), known AS (
                  SELECT coalesce(v.saga, a.saga) AS saga, coalesce(v.version, a.version) AS version,
                         v.saga IS NOT NULL AS registered, coalesce(a.unfinished, 0) AS unfinished, v.last_engine,
                         v.last_seen_at
                    FROM {schema}.saga_version v FULL JOIN active a ON a.saga = v.saga AND a.version = v.version
                )
                SELECT k.saga, k.version, reg.topic, k.registered, k.registered AND reg.version = k.version,
                       k.unfinished,
                       ARRAY(SELECT e.id FROM {schema}.engine e
                              WHERE e.stopped_at IS NULL AND k.saga || '@' || k.version = ANY(e.versions)
                              ORDER BY e.started_at, e.id),
                       k.last_engine, k.last_seen_at
                  FROM known k LEFT JOIN {schema}.saga_registration reg ON reg.saga = k.saga
                 ORDER BY k.saga, k.version
                """)); ResultSet rs = ps.executeQuery()) {
            List<dev.coop.inspect.SagaVersionSummary> all = new java.util.ArrayList<>();
            while (rs.next()) {
                all.add(new dev.coop.inspect.SagaVersionSummary(rs.getString(1), rs.getInt(2), rs.getString(3),
                        rs.getBoolean(4), rs.getBoolean(5), rs.getLong(6),
                        List.of((String[]) rs.getArray(7).getArray()), rs.getString(8),
                        rs.getObject(9, java.time.OffsetDateTime.class)));
            }
            return all;
        }
    }

    /** @param versions the saga versions the engine runs, as {@link EngineSagas#key} names them */
    public void engineStarted(Connection c, String engine, String name, String host, List<String> sagas,
            List<String> versions) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(
                "INSERT INTO {schema}.engine (id, name, host, sagas, versions) VALUES (?, ?, ?, ?, ?)"))) {
            ps.setString(1, engine);
            ps.setString(2, name);
            ps.setString(3, host);
            ps.setArray(4, c.createArrayOf("text", sagas.toArray()));
            ps.setArray(5, c.createArrayOf("text", versions.toArray()));
            ps.executeUpdate();
        }
    }

    /** Marks an engine stopped; {@code statement_timestamp()}, not the volatile clock: Citus refuses that here. */
    public void engineStopped(Connection c, String engine) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                schema.sql("UPDATE {schema}.engine SET stopped_at = statement_timestamp() WHERE id = ?"))) {
            ps.setString(1, engine);
            ps.executeUpdate();
        }
    }
}
