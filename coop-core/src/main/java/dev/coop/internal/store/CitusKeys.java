package dev.coop.internal.store;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * Launch keys on Citus (schema version 31): ordering keys through the coordinator's {@code key_turn}, idempotency keys
 * through its {@code launch_key} ({@link LaunchKeys}). A key spans hierarchies, which Citus keeps on different shards,
 * so a key's state lives on the coordinator, and each row names its run or message by root and id: what a turn
 * leads to (a run held, a run released) is a statement routed to one shard, in the transaction of the launch or of the
 * run's end, so that nothing is lost when a step fails or an engine dies.
 *
 * <p>{@link #apply} replaces, on Citus only, {@code release_ordering_key_after} (plain PostgreSQL's reads the runs of a
 * saga and key on every shard) and creates {@code take_key_turns}, which a keyed launch calls after its insert
 * ({@link KeyedRuns#takeTurns}). Both are called by a {@code SELECT} without tables, which Citus runs on the
 * coordinator, where {@code key_turn} is.
 */
final class CitusKeys {
    private CitusKeys() {
    }

    /**
     * The release on Citus: under the key's lock, the head of the key's queue is looked at by its run (by root and
     * id, one shard): a run that finished (or is named in {@code finished}) leaves the queue and the next head is
     * looked at; a HELD head becomes RUNNABLE; an active one keeps its turn, and so does one not found: Citus commits
     * the coordinator's part of a two-phase commit (this row, the key's lock let go) before the workers' {@code COMMIT
     * PREPARED}, so a launch can be seen here before its run is seen on its worker (measured: treated as gone, the
     * next run started before it). Retention deletes a pruned hierarchy's rows. So a release never needs to know
     * which run finished, and a queue whose runs all finished without a release (rows changed by hand) is cleared by
     * the next release or keyed launch. Engines poll on Citus: no notification.
     */
    static final String RELEASE = """
            CREATE OR REPLACE FUNCTION {schema}.release_ordering_key_after(s text, k text, finished uuid[])
              RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
            DECLARE
              h record;
              st text;
            BEGIN
              PERFORM {schema}.ordering_key_lock(s, k);
              LOOP
                SELECT t.key_seq, t.root_id, t.run_id INTO h FROM {schema}.key_turn t
                 WHERE t.saga = s AND t.ordering_key = k ORDER BY t.key_seq LIMIT 1;
                EXIT WHEN NOT FOUND;
                st := 'COMMITTED';
                IF NOT h.run_id = ANY (finished) THEN
                  SELECT r.status INTO st FROM {schema}.run r WHERE r.root_id = h.root_id AND r.id = h.run_id;
                END IF;
                -- not found: its launch is committed here but not yet on its worker (Citus commits the coordinator's
                -- part of a two-phase commit first, then COMMIT PREPARED): it holds its turn
                EXIT WHEN st IS NULL;
                IF st IN ('COMMITTED', 'ROLLED_BACK', 'ROLLBACK_FAILED') THEN
                  DELETE FROM {schema}.key_turn t WHERE t.saga = s AND t.ordering_key = k AND t.key_seq = h.key_seq;
                  CONTINUE;
                END IF;
                IF st = 'HELD' THEN
                  UPDATE {schema}.run r SET status = 'RUNNABLE', version = r.version + 1
                   WHERE r.root_id = h.root_id AND r.id = h.run_id AND r.status = 'HELD';
                END IF;
                EXIT;
              END LOOP;
              RETURN true;
            END $$""";

    /**
     * A keyed launch's turns on Citus, after its insert wrote its runs RUNNABLE (the caller took the keys' locks
     * first): in launch order, each keyed run of the launch's messages (read by their roots) takes a turn of its saga
     * and key, and is made HELD when the key's queue already has one. A run below a run of its saga and key (an
     * ancestor in {@code scope}, read by the scope's root) runs within that run's turn and takes none. Then each key
     * a run was held behind is released as above (a queue of finished runs is cleared). Returns the runs held.
     */
    static final String TAKE = """
            CREATE OR REPLACE FUNCTION {schema}.take_key_turns(roots uuid[], messages uuid[], scope uuid[])
              RETURNS int LANGUAGE plpgsql VOLATILE AS $$
            DECLARE
              r record;
              seq bigint;
              held int := 0;
              keys text[] := '{}';
            BEGIN
              FOR r IN SELECT x.id, x.saga, x.ordering_key, x.root_id FROM {schema}.run x
                        WHERE x.root_id = ANY (roots) AND x.message_id = ANY (messages) AND x.ordering_key IS NOT NULL
                        ORDER BY array_position(messages, x.message_id), x.saga LOOP
                CONTINUE WHEN scope IS NOT NULL AND EXISTS (
                  SELECT 1 FROM {schema}.run a WHERE a.root_id = scope[1] AND a.id = ANY (scope)
                     AND a.saga = r.saga AND a.ordering_key = r.ordering_key);
                seq := nextval('{schema}.run_key_seq');
                IF EXISTS (SELECT 1 FROM {schema}.key_turn t WHERE t.saga = r.saga AND t.ordering_key = r.ordering_key)
                THEN
                  UPDATE {schema}.run x SET status = 'HELD', key_seq = seq
                   WHERE x.root_id = r.root_id AND x.id = r.id;
                  held := held + 1;
                  keys := keys || ARRAY[r.saga, r.ordering_key];
                END IF;
                INSERT INTO {schema}.key_turn (saga, ordering_key, key_seq, root_id, run_id)
                VALUES (r.saga, r.ordering_key, seq, r.root_id, r.id);
              END LOOP;
              FOR i IN 1 .. coalesce(array_length(keys, 1), 0) / 2 LOOP
                PERFORM {schema}.release_ordering_key_after(keys[2 * i - 1], keys[2 * i], '{}');
              END LOOP;
              RETURN held;
            END $$""";

    /** join_member's foreign key to join_group (its default name, V2__joins.sql), dropped on Citus. */
    private static final String JOIN_MEMBER_KEY = "join_member_join_id_fkey";

    /** Before schema version 31 a check constraint refused every keyed message on Citus. */
    private static final String NO_KEYS = "message_idempotency_key_needs_launch_key_table_on_citus";

    /**
     * Makes {@code table} a Citus local table (still on the coordinator alone) when the coordinator is in Citus's
     * metadata: Citus then counts a write to it as a write to the coordinator's node, so a transaction that writes it
     * and a worker commits in two phases, atomically. A plain table outside Citus's metadata would be committed after
     * the worker's one-phase {@code COMMIT}, and a crash between the two would lose the key's row while its message
     * or runs stay. The tables it references or that reference it by a foreign key go with it: Citus refuses a
     * foreign key between a Citus local table and a plain one.
     */
    private static void addToMetadata(Connection c, String table) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT NOT EXISTS (SELECT 1 FROM pg_dist_partition"
                + " WHERE logicalrelid = ?::regclass) AND EXISTS (SELECT 1 FROM pg_dist_node WHERE groupid = 0)")) {
            ps.setString(1, table);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                if (!rs.getBoolean(1)) {
                    return;
                }
            }
        }
        try (PreparedStatement ps = c.prepareStatement("SELECT citus_add_local_table_to_metadata(?::regclass,"
                + " cascade_via_foreign_keys => true)")) {
            ps.setString(1, table);
            ps.executeQuery().close();
        }
    }

    /**
     * Creates the functions above when missing or different ({@link CitusFunctions#ensure}: a start finding them as
     * they are takes no lock on them), and drops the old refusal.
     */
    static void apply(Connection c, SchemaName schema) throws SQLException {
        CitusFunctions.ensure(c, schema, "{schema}.release_ordering_key_after(text, text, uuid[])", RELEASE);
        CitusFunctions.ensure(c, schema, "{schema}.take_key_turns(uuid[], uuid[], uuid[])", TAKE);
        // join_member's foreign key to join_group goes first: with it, Citus refuses an attach's write after its
        // read of every shard ("cannot modify table join_group because there was a parallel operation"). Nothing
        // deletes a join group, so its cascade never ran; an attach locks the join before it inserts a member
        dropConstraint(c, schema, "join_member", JOIN_MEMBER_KEY);
        // the keys' tables, the tasks' and signals', the schedules', the joins' (a task's opening, a schedule's
        // firing, a join's attach or settlement write one of them and a hierarchy's worker: two-phase, so that a
        // coordinator crash cannot keep one without the other)
        for (String table : new String[]{"launch_key", "key_turn", "external_task", "signal", "schedule",
                "join_group", "join_member"}) {
            addToMetadata(c, schema.value() + "." + table);
        }
        dropConstraint(c, schema, "message", NO_KEYS);
    }

    /** Drops a constraint when the table has it (a start finding it gone takes no lock on the table). */
    private static void dropConstraint(Connection c, SchemaName schema, String table, String constraint)
            throws SQLException {
        boolean present;
        try (PreparedStatement ps = c.prepareStatement("SELECT EXISTS (SELECT 1 FROM pg_constraint"
                + " WHERE conname = ? AND conrelid = to_regclass(?))")) {
            ps.setString(1, constraint);
            ps.setString(2, schema.value() + "." + table);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                present = rs.getBoolean(1);
            }
        }
        if (present) {
            try (Statement st = c.createStatement()) {
                st.execute(schema.sql("ALTER TABLE {schema}." + table + " DROP CONSTRAINT " + constraint));
            }
        }
    }
}
