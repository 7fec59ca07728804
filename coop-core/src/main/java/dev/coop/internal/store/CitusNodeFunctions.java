package dev.coop.internal.store;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

/**
 * The functions by which {@link NodeReads} reads one worker's shards of {@code run}: distributed by their first
 * argument ({@code anchor}) and co-located with {@code run}, so that Citus runs a call on the worker that holds the
 * anchor's shard. A delegated function may not run a query of a distributed table that reads more than its own shard
 * ("cannot execute a distributed query from a query on a shard"), so it reads the worker's shards themselves, by the
 * names the worker's metadata gives ({@code shard_name}), with every value bound ({@code EXECUTE ... USING}). Created
 * with the Citus layout, only when missing or different ({@link CitusFunctions#ensure}).
 */
final class CitusNodeFunctions {
    /**
     * The shards of {@code run} on the worker that runs the function, each read by {@code $q$...$q$} (a {@code format}
     * template, {@code %s} the shard), joined by {@code UNION ALL}; null when the worker holds none.
     */
    private static final String LOCAL_SHARDS = """
              SELECT string_agg(format($q$%s$q$, shard_name('{schema}.run'::regclass, s.shardid)), ' UNION ALL ')
                INTO shards
                FROM pg_dist_shard s JOIN pg_dist_placement p ON p.shardid = s.shardid
               WHERE s.logicalrelid = '{schema}.run'::regclass
                 AND p.groupid = (SELECT groupid FROM pg_dist_local_group);
              IF shards IS NULL THEN
                RETURN;
              END IF;
            """;

    /** The claim's conditions ({@link ShardedClaims#CANDIDATES}'s), its values numbered: saga, version, now. */
    static final String CANDIDATE_CONDITIONS = numbered(ShardedClaims.CANDIDATES
            .substring(ShardedClaims.CANDIDATES.indexOf("WHERE "), ShardedClaims.CANDIDATES.indexOf("ORDER BY")));

    private static final String CANDIDATES = """
            CREATE OR REPLACE FUNCTION {schema}.node_candidates(anchor uuid, saga text, version int,
                now_at timestamptz, lim int, skip int) RETURNS TABLE (root_id uuid, id uuid)
                LANGUAGE plpgsql STABLE AS $f$
            DECLARE shards text;
            BEGIN
            {local}
              RETURN QUERY EXECUTE 'SELECT c.root_id, c.id FROM (' || shards
                  || ') c ORDER BY c.priority DESC, c.runnable_at LIMIT $4 OFFSET $5'
                USING saga, version, now_at, lim, skip;
            END $f$
            """
            .replace("{local}", LOCAL_SHARDS.replace("%s", "(SELECT r.root_id, r.id, r.priority, r.runnable_at"
                    + " FROM %s r " + CANDIDATE_CONDITIONS.strip() + " ORDER BY r.priority DESC, r.runnable_at"
                    + " LIMIT $4 + $5)"));

    private static final String DUE = """
            CREATE OR REPLACE FUNCTION {schema}.node_due(anchor uuid, sagas text[], versions int[],
                now_at timestamptz)
                RETURNS TABLE (saga text, first_ms bigint, next_ms bigint) LANGUAGE plpgsql STABLE AS $f$
            DECLARE shards text; t timestamptz := coalesce(now_at, statement_timestamp());
            BEGIN
            {local}
              RETURN QUERY EXECUTE $e$SELECT d.saga, floor(extract(epoch FROM (min(d.first_at) - $3)) * 1000)::bigint,
                  ceil(extract(epoch FROM (min(d.next_at) - $3)) * 1000)::bigint FROM ($e$ || shards
                  || ') d GROUP BY d.saga'
                USING sagas, versions, t;
            END $f$
            """.replace("{local}", LOCAL_SHARDS.replace("%s", "SELECT r.saga, min(r.runnable_at) AS first_at,"
            + " min(r.runnable_at) FILTER (WHERE r.runnable_at > $3) AS next_at FROM %s r"
            + " WHERE r.saga = ANY($1) AND r.saga_version = ANY($2) AND r.status = 'RUNNABLE' GROUP BY r.saga"));

    /** The functions: signature, then {@code CREATE} statement. */
    private static final String[][] FUNCTIONS = {
            {"{schema}.node_candidates(uuid, text, int, timestamptz, int, int)", CANDIDATES},
            {"{schema}.node_due(uuid, text[], int[], timestamptz)", DUE}};

    /** A worker's candidates. Parameters: anchor, saga, version, now, limit, offset. */
    static final String CANDIDATES_CALL = "SELECT * FROM {schema}.node_candidates(?::uuid, ?, ?, ?::timestamptz, ?, ?)";
    /** A worker's probe. Parameters: anchor, saga names, versions, now. */
    static final String DUE_CALL = "SELECT * FROM {schema}.node_due(?::uuid, ?::text[], ?::int[], ?::timestamptz)";

    private CitusNodeFunctions() {
    }

    /** {@code conditions} with their {@code ?} as {@code $1}, {@code $2}, ... */
    private static String numbered(String conditions) {
        StringBuilder out = new StringBuilder();
        int n = 0;
        for (char ch : conditions.toCharArray()) {
            if (ch == '?') {
                out.append('$').append(++n);
            } else {
                out.append(ch);
            }
        }
        if (n != 3) {
            throw new IllegalStateException("the claim's candidates no longer take saga, version and now: " + n);
        }
        return out.toString();
    }

    /** Creates the functions when missing or different, and distributes them with {@code run} (once). */
    static void apply(Connection c, SchemaName schema) throws SQLException {
        for (String[] function : FUNCTIONS) {
            CitusFunctions.ensure(c, schema, function[0], function[1]);
            String signature = schema.sql(function[0]);
            if (!delegated(c, signature)) {
                try (PreparedStatement ps = c.prepareStatement(
                        "SELECT create_distributed_function(?::regprocedure, 'anchor', colocate_with => ?)")) {
                    ps.setString(1, signature);
                    ps.setString(2, schema.value() + ".run");
                    ps.execute();
                }
            }
        }
    }

    /** Whether Citus delegates calls of {@code signature} by a distribution argument. */
    private static boolean delegated(Connection c, String signature) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_object"
                + " WHERE classid = 'pg_proc'::regclass AND objid = to_regprocedure(?)"
                + " AND distribution_argument_index IS NOT NULL)")) {
            ps.setString(1, signature);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        }
    }
}
