package dev.coop.internal.store;

import dev.coop.failure.CoopStoreException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Coop's tables on a Citus cluster: after the ordinary migrations, each hierarchy's rows are put on one shard, so
 * that a step's transaction (claim by id, advance, count-off, scoped launches) can be routed to one worker.
 *
 * <p>
 * <b>Chosen by detection</b>: the layout applies when the database has the {@code citus} extension. Citus keeps its
 * metadata per database, so the extension is an exact statement of intent: a database without it is plain PostgreSQL,
 * where nothing here runs and nothing changes for users. Leaving Coop's tables local on a Citus database would run
 * (through the coordinator, as one PostgreSQL) but scale nothing, which is not what a team that installed Citus into
 * Coop's database asked for; a team that wants that keeps Coop in a database of its own. Detection also needs no new
 * setting on the builders.
 *
 * <p>
 * <b>The distribution</b> (docs/scaling.md, "Tables"):
 * <ul>
 * <li>{@code run}, {@code event}, {@code message}, {@code cancellation}: hash by {@code root_id}, co-located;
 * {@code audit}: by {@code message_id} (a hierarchy's root message), co-located. Citus enforces a primary key only
 * within a shard, so each primary key gains the distribution column first: {@code (root_id, id)},
 * {@code (root_id, scope_id)}, {@code (message_id, id)}. The primary keys stay unique: ids are UUIDs or from a
 * sequence.</li>
 * <li>The registry ({@code saga_registration}, {@code saga_version}, {@code engine}): reference tables, a copy on every
 * node, so that a launch on a worker joins its own copy; written only when engines start.</li>
 * <li>Everything cross-hierarchy by nature stays local to the coordinator: {@code schedule}, {@code join_group},
 * {@code join_member}, {@code rate_token} (saga limits), {@code run_count}, {@code external_task} (its token and its
 * open task key are unique across hierarchies), {@code signal} and {@code schema_version}; {@code external_task},
 * {@code signal}, {@code schedule}, the joins' and the keys' tables as Citus local tables ({@link CitusKeys}: a
 * transaction writing one of them and a worker commits in two phases, atomically). Their triggers
 * ({@code schedule_created_notify}, {@code schedule_moved_notify}, {@code join_group_timeout_notify}: notifications)
 * are allowed there, since only triggers on distributed and reference tables are refused.</li>
 * </ul>
 *
 * <p>
 * <b>Scopes</b>: {@code cancellation} keeps a unique index on {@code scope_id} alone (created with
 * {@code citus.allow_unsafe_constraints}, so enforced per shard): every row of a scope carries the scope's root and
 * is therefore on one shard, so per-shard uniqueness is uniqueness, and the operators' {@code ON CONFLICT (scope_id)}
 * keeps an index to plan against.
 *
 * <p>
 * <b>Idempotency keys</b>: {@code message_idempotency (topic, idempotency_key)} cannot be enforced across shards.
 * The launch's {@code ON CONFLICT (topic, idempotency_key)} needs an index of exactly those columns to plan, so the
 * index is kept per shard ({@code citus.allow_unsafe_constraints}); the key is enforced across shards by the
 * coordinator's {@code launch_key} (schema version 31, {@link LaunchKeys}), which a keyed launch writes first.
 *
 * <p>
 * Applied once, in the migrations' transaction under their lock; a schema whose {@code run} is already distributed is
 * left alone. A schema migrated before Citus was installed is distributed on the next start (Citus copies the rows).
 */
public final class CitusLayout {
    private static final Logger log = LoggerFactory.getLogger(CitusLayout.class);

    /** Distributed by the hierarchy's root: table, distribution column, primary key constraint, new primary key. */
    private static final String[][] BY_ROOT = {
            {"run", "root_id", "run_pkey", "root_id, id"},
            {"event", "root_id", "event_pkey", "root_id, id"},
            {"message", "root_id", "message_pkey", "root_id, id"},
            {"cancellation", "root_id", "cancellation_pkey", "root_id, scope_id"},
            {"audit", "message_id", "audit_pkey", "message_id, id"}};

    /** Reference tables: a copy on every node. */
    private static final List<String> REFERENCE = List.of("saga_registration", "saga_version", "engine");

    /**
     * {@code {now}} on Citus: the bound time, or the statement's time, by {@code now_or} ({@link #FUNCTIONS}). Marked
     * {@code IMMUTABLE} on purpose: Citus then evaluates it on the coordinator with its bound argument, once per
     * statement (its argument is a parameter: no plan keeps a folded value), and sends the workers a constant, where
     * it refuses a stable or volatile function inside {@code CASE} or {@code COALESCE} of an {@code UPDATE}.
     */
    static final String NOW_SQL = "{schema}.now_or(?::timestamptz)";

    /**
     * Whether a transaction of this node holds {@code x} (a row's {@code xmax}: a step's transaction locks its run):
     * called in a statement routed to a worker by root, it reads that worker's {@code pg_locks} (the coordinator's
     * do not know a worker's transaction ids). PL/pgSQL, so that Citus cannot inline it into a join with the
     * coordinator's view. For {@code Inspection.waitingFor}.
     */
    public static final String XACT_RUNNING_SIGNATURE = "{schema}.xact_running(xid)";

    /**
     * The claim's share lock on the metadata of a root's {@code run} shard ({@link ShardedClaims#SHARD_LOCK}: {@code
     * lock_shard_metadata(5, ...)}, 5 being {@code ShareLock}). {@code SECURITY DEFINER}: Citus lets only the table's
     * owner take that lock, and the engines' database role may be one that was granted Coop's tables, not their owner
     * (CitusRoleTest). It takes a share lock and nothing else; its search path is fixed.
     */
    static final String LOCK_RUN_SHARD = "CREATE OR REPLACE FUNCTION {schema}.lock_run_shard(root uuid) RETURNS void"
            + " LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS 'BEGIN"
            + " PERFORM lock_shard_metadata(5, ARRAY[get_shard_id_for_distribution_column(''{schema}.run'', root)]);"
            + " END'";

    /**
     * {@link #LOCK_RUN_SHARD}, the functions behind {@link #NOW_SQL} and {@link #onCitus}'s due times, the
     * notification that does nothing ({@code notify_off}), and {@link #XACT_RUNNING_SIGNATURE}: signature, then
     * {@code CREATE} statement ({@link CitusFunctions#ensure}). PL/pgSQL, so that the planner does not inline them back
     * into a {@code COALESCE} or a stable {@code timestamptz + interval}.
     */
    private static final String[][] FUNCTIONS = {
            {"{schema}.lock_run_shard(uuid)", LOCK_RUN_SHARD},
            {"{schema}.now_or(timestamptz)", "CREATE OR REPLACE FUNCTION {schema}.now_or(t timestamptz)"
                    + " RETURNS timestamptz LANGUAGE plpgsql IMMUTABLE"
                    + " AS 'BEGIN RETURN coalesce(t, statement_timestamp()); END'"},
            {"{schema}.now_plus(timestamptz, float8)", "CREATE OR REPLACE FUNCTION {schema}.now_plus(t timestamptz,"
                    + " ms float8) RETURNS timestamptz LANGUAGE plpgsql IMMUTABLE"
                    + " AS 'BEGIN RETURN coalesce(t, statement_timestamp()) + ms * interval ''1 millisecond''; END'"},
            {"{schema}.notify_off(text, text)", "CREATE OR REPLACE FUNCTION {schema}.notify_off(channel text,"
                    + " payload text) RETURNS void LANGUAGE plpgsql IMMUTABLE AS 'BEGIN END'"},
            {XACT_RUNNING_SIGNATURE, "CREATE OR REPLACE FUNCTION {schema}.xact_running(x xid) RETURNS boolean"
                    + " LANGUAGE plpgsql STABLE AS 'BEGIN RETURN EXISTS (SELECT 1 FROM pg_locks l"
                    + " WHERE l.locktype = ''transactionid'' AND l.transactionid = x); END'"}};

    /** A due time {@code {now} + n ms} as the store writes it, and what it becomes on Citus (same parameters). */
    private static final String[][] DUE_IN = {
            {"{now} + ? * interval '1 millisecond'", "{schema}.now_plus(?::timestamptz, ?::float8)"},
            {"{now} + ?::bigint * interval '1 millisecond'", "{schema}.now_plus(?::timestamptz, ?::bigint::float8)"}};

    /**
     * {@code template} with its times as Citus plans them inside an {@code UPDATE}'s {@code CASE}: {@code {now}} as
     * {@link #NOW_SQL} and {@code {now} + n ms} as {@code now_plus} (a stable {@code timestamptz + interval} there is
     * refused too). {@code {schema}} is left for the caller.
     */
    static String onCitus(String template) {
        String sql = template;
        for (String[] due : DUE_IN) {
            sql = sql.replace(due[0], due[1]);
        }
        // no notifications on Citus: PostgreSQL cannot PREPARE a transaction that sent one (a task's settlement is a
        // two-phase commit), and a worker's never reach the coordinator's listeners; engines there poll
        sql = sql.replace("pg_notify(", "{schema}.notify_off(");
        // the advance's guard reads no distributed table itself: Citus evaluates it on the coordinator
        sql = sql.replace(AdvanceSql.CANCELLATION_SEEN, "(?::uuid IS NOT NULL OR ?::uuid[] IS NOT NULL)");
        return sql.replace("{now}", NOW_SQL);
    }

    /**
     * {@code sql} with each {@code from} replaced by its {@code to} (pairs): a statement's form on Citus, written as
     * the difference from plain PostgreSQL's (which stays exactly as it is). Fails when a {@code from} is not in it,
     * so that an edit of the statement cannot silently drop the Citus form's change.
     */
    public static String rewritten(String sql, String... fromTo) {
        String out = sql;
        for (int i = 0; i < fromTo.length; i += 2) {
            if (!out.contains(fromTo[i])) {
                throw new IllegalStateException("The Citus form no longer finds '" + fromTo[i] + "' in " + sql);
            }
            out = out.replace(fromTo[i], fromTo[i + 1]);
        }
        return out;
    }

    private CitusLayout() {
    }

    /**
     * {@code schema} as its statements are written for the database behind {@code dataSource}: the Citus form when
     * the database has the extension and the schema's tables are distributed (a schema a team migrated itself with
     * {@code Coop.migrationSql}, which has no layout, stays local to the coordinator: plain statements).
     */
    public static SchemaName layoutOf(javax.sql.DataSource dataSource, SchemaName schema) {
        try (Connection c = dataSource.getConnection()) {
            return isCitus(c) && distributed(c, schema) ? schema.onCitus() : schema;
        } catch (SQLException e) {
            throw new CoopStoreException("Could not read whether schema '" + schema.value()
                    + "' is on Citus: " + e.getMessage(), e);
        }
    }

    /** Whether the connection's database has the {@code citus} extension. */
    public static boolean isCitus(Connection c) throws SQLException {
        try (Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')")) {
            rs.next();
            return rs.getBoolean(1);
        }
    }

    /** Distributes the schema's tables when the database is a Citus one and they are not yet; else does nothing. */
    static void applyIfCitus(Connection c, SchemaName schema) throws SQLException {
        if (!isCitus(c)) {
            return;
        }
        for (String[] function : FUNCTIONS) { // only when missing or different: no DDL on a running cluster
            CitusFunctions.ensure(c, schema, function[0], function[1]);
        }
        CitusKeys.apply(c, schema); // launch keys through the coordinator's tables (schema version 31)
        if (distributed(c, schema)) {
            seenOnce(c, schema);
            CitusNodeFunctions.apply(c, schema); // the reads of one worker, while another is down
            return;
        }
        try (Statement st = c.createStatement()) {
            for (String table : REFERENCE) {
                call(c, "SELECT create_reference_table(?::regclass)", schema.value() + "." + table, null);
            }
            st.execute(schema.sql("DROP INDEX {schema}.message_idempotency"));
            String colocate = null;
            for (String[] t : BY_ROOT) {
                st.execute(schema.sql("ALTER TABLE {schema}." + t[0] + " DROP CONSTRAINT " + t[2] + ", ADD CONSTRAINT "
                        + t[2] + " PRIMARY KEY (" + t[3] + ")"));
                call(c, "SELECT create_distributed_table(?::regclass, ?, colocate_with => ?)",
                        schema.value() + "." + t[0], new String[]{t[1], colocate == null ? "default" : colocate});
                colocate = schema.value() + "." + t[0];
            }
            st.execute("SET LOCAL citus.allow_unsafe_constraints = on");
            st.execute(schema.sql("CREATE UNIQUE INDEX message_idempotency ON {schema}.message (topic, idempotency_key)"
                    + " WHERE idempotency_key IS NOT NULL"));
            // a scope's rows all carry its root, so they share a shard: per shard, scope_id alone is unique
            st.execute(schema.sql("CREATE UNIQUE INDEX cancellation_scope ON {schema}.cancellation (scope_id)"));
            st.execute("SET LOCAL citus.allow_unsafe_constraints = off");
        }
        seenOnce(c, schema);
        CitusNodeFunctions.apply(c, schema);
        List<String> refused = triggersOnCitusTables(c, schema);
        if (!refused.isEmpty()) {
            throw new CoopStoreException("Citus refuses triggers on distributed and reference tables, and schema '"
                    + schema.value() + "' has " + refused, null);
        }
        log.info("Distributed Coop schema {} on Citus: run, event, message, cancellation and audit by hierarchy"
                + " root, the registry as reference tables", schema.value());
    }

    /**
     * The unique index by which the claim on Citus writes a run's SEEN once ({@link ShardedClaims#CLAIMED_SEEN}): a
     * run's rows are in its hierarchy's shard, so per shard is enough. Created when missing, also on a schema that
     * was distributed before it existed.
     */
    private static void seenOnce(Connection c, SchemaName schema) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT to_regclass(?) IS NOT NULL")) {
            ps.setString(1, schema.value() + ".event_seen");
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                if (rs.getBoolean(1)) {
                    // CREATE INDEX IF NOT EXISTS takes a ShareLock on event before it finds the index, so it waited
                    // for every step in progress: an engine starting while another held a step long did not start
                    return;
                }
            }
        }
        try (Statement st = c.createStatement()) {
            st.execute(schema.sql("CREATE UNIQUE INDEX IF NOT EXISTS event_seen ON {schema}.event"
                    + " (root_id, message_id, saga) WHERE type = 'SEEN'"));
        }
    }

    private static boolean distributed(Connection c, SchemaName schema) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = to_regclass(?))")) {
            ps.setString(1, schema.value() + ".run");
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        }
    }

    /** The user triggers left on the schema's distributed and reference tables, as {@code table.trigger}. */
    static List<String> triggersOnCitusTables(Connection c, SchemaName schema) throws SQLException {
        List<String> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("""
                SELECT t.tgrelid::regclass::text || '.' || t.tgname FROM pg_trigger t
                  JOIN pg_dist_partition p ON p.logicalrelid = t.tgrelid
                  JOIN pg_class r ON r.oid = t.tgrelid
                 WHERE NOT t.tgisinternal AND r.relnamespace = ?::regnamespace
                   AND NOT (p.partmethod = 'n' AND p.repmodel = 's') -- a Citus local table may have triggers
                 ORDER BY 1""")) {
            ps.setString(1, schema.value());
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(rs.getString(1));
                }
            }
        }
        return out;
    }

    private static void call(Connection c, String sql, String table, String[] more) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, table);
            if (more != null) {
                for (int i = 0; i < more.length; i++) {
                    ps.setString(i + 2, more[i]);
                }
            }
            ps.execute();
        }
    }
}
