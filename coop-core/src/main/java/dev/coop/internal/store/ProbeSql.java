package dev.coop.internal.store;

/**
 * The SQL of the reads that change nothing: the probe for due runs, a message's run statuses and its hierarchy's
 * log. {@code {schema}} is replaced by the validated schema name.
 */
final class ProbeSql {
    private ProbeSql() {
    }

    /**
     * Probe: per saga version, milliseconds until its earliest runnable run is due, and until the earliest one due in
     * the future (which the first hides when it is due now). The claiming index is ordered by version, then priority,
     * so the priorities present are found by skipping from one to the next ({@code levels}, one index probe each),
     * then two index probes per priority present: with no priorities set, four probes per saga version. Runs of
     * versions the engine does not have are not looked at: it could not claim them.
     */
    static final String PROBE = """
            WITH RECURSIVE levels(saga, version, p) AS (
              SELECT s.saga, s.version, (SELECT max(r.priority) FROM {schema}.run r
                                          WHERE r.saga = s.saga AND r.saga_version = s.version
                                            AND r.status = 'RUNNABLE')
                FROM unnest(?::text[], ?::int[]) AS s(saga, version)
              UNION ALL
              SELECT l.saga, l.version, (SELECT max(r.priority) FROM {schema}.run r
                                          WHERE r.saga = l.saga AND r.saga_version = l.version
                                            AND r.status = 'RUNNABLE' AND r.priority < l.p)
                FROM levels l WHERE l.p IS NOT NULL
            )
            SELECT l.saga, floor(extract(epoch FROM (min(d.due) - {now})) * 1000)::bigint,
                   ceil(extract(epoch FROM (min(f.due) - {now})) * 1000)::bigint
              FROM levels l
              CROSS JOIN LATERAL (SELECT min(r.runnable_at) AS due FROM {schema}.run r
                                   WHERE r.saga = l.saga AND r.saga_version = l.version AND r.status = 'RUNNABLE'
                                     AND r.priority = l.p) d
              CROSS JOIN LATERAL (SELECT min(r.runnable_at) AS due FROM {schema}.run r
                                   WHERE r.saga = l.saga AND r.saga_version = l.version AND r.status = 'RUNNABLE'
                                     AND r.priority = l.p AND r.runnable_at > %s) f
             WHERE l.p IS NOT NULL
             GROUP BY l.saga
            """
            .formatted(ClaimSql.DUE_NOW);

    /**
     * {@link #PROBE} on Citus, where a recursive CTE must filter by the distribution column: one aggregate per saga
     * over every shard (one task each), without the priority levels (the earliest due run of any priority) and with
     * the versions as a set apart from the names (a saga's run of a version another saga has counts too: a claim
     * then finds nothing, and the engine waits for its poll). Parameters: {now} three times, names, versions.
     */
    static final String PROBE_SHARDED = """
            SELECT r.saga, floor(extract(epoch FROM (min(r.runnable_at) - {now})) * 1000)::bigint,
                   ceil(extract(epoch FROM (min(r.runnable_at) FILTER (WHERE r.runnable_at > {now}) - {now}))
                        * 1000)::bigint
              FROM {schema}.run r
             WHERE r.saga = ANY(?::text[]) AND r.saga_version = ANY(?::int[]) AND r.status = 'RUNNABLE'
             GROUP BY r.saga
            """;

    /** The statuses of a message's runs as readers show them: RUNNABLE while awaiting children is WAITING. */
    static final String RUN_STATUSES = """
            SELECT CASE WHEN status = 'RUNNABLE' AND pending_children > 0 THEN 'WAITING' ELSE status END
              FROM {schema}.run WHERE message_id = ?
            """;

    /**
     * The log of a message's hierarchy: its EMITTED, then everything its runs and their descendants wrote. The
     * message's EMITTED ({@code t}, one per message) names the hierarchy's root, and every table is joined by it: on
     * Citus a co-located join, one task per shard (docs/guide/citus.md, "The reads").
     */
    static final String EVENTS = """
            SELECT ev.id, ev.message_id, ev.type, ev.saga, ev.engine, ev.step, ev.lineage, ev.created_at,
                   ev.started_at, ev.exception::text AS exception, ev.context::text AS context, ev.attempt
              FROM {schema}.event ev
              JOIN {schema}.event t ON t.root_id = ev.root_id AND t.message_id = ?::uuid AND t.type = 'EMITTED'
             WHERE (ev.root_id = ?::uuid
                    OR (ev.message_id = ?::uuid AND ev.type = 'EMITTED')
                    OR EXISTS (SELECT 1 FROM {schema}.run r
                                WHERE r.root_id = ev.root_id AND r.message_id = ?::uuid
                                  AND ev.lineage[1:cardinality(r.lineage)] = r.lineage))
               AND ev.id > ?
             ORDER BY ev.id
             LIMIT ?
            """;
}
