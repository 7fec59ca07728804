package dev.coop.internal.store;

/**
 * The SQL of a launch: messages, their EMITTED events and their runs. {@code {schema}} is replaced by the validated
 * schema name.
 */
final class EmitSql {
    private EmitSql() {
    }

    /**
     * The launch's wake-ups (schema version 27; a trigger sent them before): its runnable runs notify, but for those
     * of the sagas this engine wakes itself that are due now. One parameter: those sagas ({@link Wakes}).
     */
    private static final String WOKE = Wakes.notifying("woke", "runs", "?");

    /**
     * Emit: write messages, their EMITTED events, and one run for every saga registered for each topic right now,
     * with the saga's current version (the highest registered). Runs in a scope get the emitting run as parent; the
     * parent waits for them; {@code cancel_from} says from where in their lineage cancellations reach them (version
     * 24). A message with an idempotency key
     * that another message of its topic already holds is not written (nor its event and runs); it comes back as
     * {@code '!' || n} (its ordinal) so that the caller can look the holder up. A run with an ordering key may be
     * created HELD instead of RUNNABLE (see {@link KeyedRuns}).
     *
     * <p>A run's lineage is built with {@code array || ARRAY[id]}, never {@code array || id}: appending an element
     * yields an expanded array, which PostgreSQL stores with a 4-byte header where every later update of the row
     * writes the same array with a 1-byte one; the bytes differ, so the run's first update could never be HOT (a new
     * entry in every index of {@code run}).
     */
    static final String EMIT = """
            WITH input AS (
              SELECT u.id, u.topic, u.payload::jsonb AS payload, u.context, u.due, u.idem, u.priority, u.okey, u.n,
                     coalesce(?::uuid, u.id) AS root
                FROM unnest(?::uuid[], ?::text[], ?::text[], ?::text[], ?::timestamptz[], ?::text[], ?::int[],
                            ?::text[])
                     WITH ORDINALITY AS u(id, topic, payload, context, due, idem, priority, okey, n)
            ), msg AS (
              INSERT INTO {schema}.message (id, topic, payload, created_at, idempotency_key, root_id)
              SELECT id, topic, payload, {now}, idem, root FROM input ORDER BY n
              ON CONFLICT (topic, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
              RETURNING id, idempotency_key IS NOT NULL AS keyed
            ), duplicate AS ( -- keyed messages not written: the key was taken (usually empty)
              SELECT id, n FROM input WHERE idem IS NOT NULL AND id NOT IN (SELECT id FROM msg WHERE keyed)
            ), written AS (
              SELECT * FROM input WHERE id NOT IN (SELECT id FROM duplicate)
            ), emitted AS (
              INSERT INTO {schema}.event (message_id, type, saga, engine, step, lineage, context, root_id)
              SELECT id, 'EMITTED', ?, ?, ?, coalesce(?::uuid[], ARRAY[id]), context, root FROM written ORDER BY n
            ), runs AS (
              INSERT INTO {schema}.run (id, message_id, saga, saga_version, lineage, parent_id, parent_seq, status,
                                        context, runnable_at, priority, ordering_key, cancel_from, root_id)
              SELECT x.id, x.message_id, x.saga, x.version, coalesce(?::uuid[], ARRAY[x.message_id]) || ARRAY[x.id],
                     ?::uuid,
                     ?::int, 'RUNNABLE', x.context, coalesce(x.due, {now}), coalesce(x.priority, 0),
                     x.okey, ?::int, x.root
                FROM (SELECT {schema}.uuid_v7() AS id, written.id AS message_id, written.root, reg.saga, reg.version,
                             written.context, written.due, written.priority, written.okey
                        FROM written JOIN {schema}.saga_registration reg ON reg.topic = written.topic
                       ORDER BY written.n, reg.saga) x
              RETURNING saga, saga_version, status, runnable_at
            ), {woke}
            SELECT saga, count(*)::int FROM runs, woke GROUP BY saga
            UNION ALL -- topics nobody handles come back as '#topic' (saga names cannot start with '#')
            SELECT DISTINCT '#' || written.topic, 0 FROM written
             WHERE NOT EXISTS (SELECT 1 FROM {schema}.saga_registration r WHERE r.topic = written.topic)
            UNION ALL -- keys already taken come back as '!', with the message's ordinal
            SELECT '!', n::int FROM duplicate
            """.replace("{woke}", WOKE);

    /**
     * {@link #EMIT} of messages some of which carry an ordering key ({@link KeyedRuns}), sent after the launch took
     * the keys' locks: a keyed run gets the next {@code key_seq} and is created HELD when its key has an unfinished
     * run of its saga, or an earlier message of this launch has its saga and key, unless one of its ancestors is a
     * run of that saga and key (held behind its own ancestor, which waits for it, it would never run: it runs within
     * that run's turn). One parameter more, after the parent's seq: the scope again.
     */
    static final String EMIT_KEYED = keyed(EMIT);

    private static String keyed(String emit) {
        String[][] edits = {
                {"ordering_key, cancel_from, root_id)", "ordering_key, cancel_from, root_id, key_seq)"},
                {"?::int, 'RUNNABLE', x.context,",
                        """
                                ?::int,
                                             CASE WHEN x.okey IS NULL THEN 'RUNNABLE'
                                                  WHEN EXISTS (SELECT 1 FROM {schema}.run a WHERE a.id = ANY(?::uuid[])
                                                                  AND a.saga = x.saga AND a.ordering_key = x.okey)
                                                  THEN 'RUNNABLE' -- below a run of its saga and key: within that run's turn
                                                  WHEN x.key_rank > 1 OR EXISTS (SELECT 1 FROM {schema}.run k
                                                                                  WHERE k.saga = x.saga AND k.ordering_key = x.okey
                                                                                    AND k.status IN ('RUNNABLE', 'WAITING',
                                                                                                     'PARKED', 'HELD'))
                                                  THEN 'HELD' ELSE 'RUNNABLE' END,
                                             x.context,"""
                                .strip()},
                {"x.okey, ?::int, x.root\n", "x.okey, ?::int, x.root, x.key_seq\n"},
                {"written.context, written.due, written.priority, written.okey\n", """
                        written.context, written.due, written.priority, written.okey,
                                             CASE WHEN written.okey IS NOT NULL THEN nextval('{schema}.run_key_seq') END
                                                 AS key_seq,
                                             row_number() OVER (PARTITION BY reg.saga, written.okey ORDER BY written.n)
                                                 AS key_rank
                        """.strip() + "\n"}};
        String sql = emit;
        for (String[] edit : edits) {
            if (!sql.contains(edit[0])) {
                throw new IllegalStateException("the launch no longer has " + edit[0]);
            }
            sql = sql.replace(edit[0], edit[1]);
        }
        return sql;
    }

    /**
     * Emit of one message without an idempotency key or an ordering key (a client's launch, a step that launches one
     * child): {@link #EMIT} with scalar parameters, without its arrays and its key handling. Returns a row per saga
     * that got a run (one each), and no row at all for a topic nobody handles (the caller knows the topic: no second
     * probe of {@code saga_registration}, no aggregate, no {@code UNION}).
     * Parameters: id, topic, payload, {now}, root, id, saga, engine, step, scope, id, context, root, id, scope, id,
     * parent id, parent seq, context, due, {now}, priority, cancel from, root, topic, local sagas.
     */
    static final String EMIT_ONE = """
            WITH msg AS (
              INSERT INTO {schema}.message (id, topic, payload, created_at, root_id)
              VALUES (?::uuid, ?, ?::jsonb, {now}, ?::uuid)
            ), emitted AS (
              INSERT INTO {schema}.event (message_id, type, saga, engine, step, lineage, context, root_id)
              VALUES (?::uuid, 'EMITTED', ?, ?, ?, coalesce(?::uuid[], ARRAY[?::uuid]), ?, ?::uuid)
            ), runs AS (
              INSERT INTO {schema}.run (id, message_id, saga, saga_version, lineage, parent_id, parent_seq, status,
                                        context, runnable_at, priority, cancel_from, root_id)
            {runs}  RETURNING saga, saga_version, status, runnable_at
            ), {woke}
            SELECT saga, 1 FROM runs, woke -- one message: one run per saga; none when nobody handles the topic
            """.replace("{woke}", WOKE).replace("{runs}", EmitSql.RUNS_ONE);

    /**
     * The runs of {@link #EMIT_ONE}: one per saga registered for the topic, read by the statement. On Citus this
     * {@code INSERT ... SELECT} from the reference table runs through the coordinator and commits in two phases;
     * {@link CitusEmits} launches there instead.
     */
    static final String RUNS_ONE = """
              SELECT x.id, ?::uuid, x.saga, x.version, coalesce(?::uuid[], ARRAY[?::uuid]) || ARRAY[x.id], ?::uuid,
                     ?::int, 'RUNNABLE', ?, coalesce(?::timestamptz, {now}), ?::int, ?::int, ?::uuid
                FROM (SELECT {schema}.uuid_v7() AS id, reg.saga, reg.version
                        FROM {schema}.saga_registration reg WHERE reg.topic = ? ORDER BY reg.saga) x
            """;
}
