package dev.coop;

import dev.coop.internal.store.SchemaName;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.sql.Connection;
import java.sql.ParameterMetaData;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.OffsetDateTime;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import dev.coop.test.CitusDatabase;

/**
 * Citus's verdict on each SQL constant of Coop's store: every {@code static final String} of the classes below that
 * is one statement is planned on the cluster with {@code EXPLAIN} (never executed), its parameters bound by their
 * described types (one fixed UUID for every uuid, so that a statement by root is routable), and the outcome recorded:
 * the task count of a plan, or the error by which Citus refuses it. A statement refused at planning is refused when
 * run; one that plans may still fail at execution (a function evaluated on a worker), which the engine tests show.
 */
final class CitusStatements {
    /** The classes holding the SQL, with the area of the engineer whose statements they are. */
    static final Map<String, String> CLASSES = new LinkedHashMap<>();

    static {
        for (String c : List.of("store.ClaimSql", "store.ProbeSql")) {
            CLASSES.put("dev.coop.internal." + c, "claim");
        }
        CLASSES.put("dev.coop.internal.store.EmitSql", "launch");
        for (String c : List.of("store.AdvanceSql", "store.RoundAdvanceSql", "store.ChildSql", "store.AttemptLog")) {
            CLASSES.put("dev.coop.internal." + c, "advance");
        }
        CLASSES.put("dev.coop.internal.operate.Operations", "advance (operator lock)");
        CLASSES.put("dev.coop.internal.task.TaskSql", "advance (operator lock)");
        for (String c : List.of("store.SagaLimits", "runtime.Topology", "operate.SelectionBatches",
                "operate.BulkActions", "operate.RootCancellation", "read.RunListing", "read.TreeReader",
                "read.Unfinished", "read.RunCountRollup",
                "retention.Retention", "schedule.Schedules", "join.JoinSql", "task.TaskCompensations",
                "task.TaskReads", "task.RootSettlement", "task.RootTimeOut", "store.RootChildren", "task.RootOpening",
                "task.RootCompensations", "store.RootChildRollbacks", "read.Inspection")) {
            CLASSES.put("dev.coop.internal." + c, "other");
        }
    }

    static final UUID ROOT = UUID.fromString("01a23499-0000-7000-8000-000000000001");
    private static final Pattern TASKS = Pattern.compile("Task Count: (\\d+)");
    private static final SchemaName SCHEMA = new SchemaName("coop");

    private CitusStatements() {
    }

    /** One statement's verdict: {@code tasks} >= 0 when planned, else the error; {@code area} whose it is. */
    record Verdict(String name, String area, int tasks, String error) {
        boolean refused() {
            return error != null;
        }

        @Override
        public String toString() {
            return name + " [" + area + "]: " + (refused() ? "REFUSED " + error : tasks + " task(s)");
        }
    }

    private static Object field(String className, String name) throws Exception {
        Field f = Class.forName(className).getDeclaredField(name);
        f.setAccessible(true);
        return f.get(null);
    }

    /** The functions the advance's statements call, being removed from them (issue 37, advance area). */
    static final List<String> ADVANCE_FUNCTIONS = List.of("claim_lost", "commit_allowed", "assert_not_cancelled");

    /**
     * The verdicts of the advance's statements as if {@link #ADVANCE_FUNCTIONS} were gone: for the transaction
     * (rolled back, never propagated) they are replaced by {@code IMMUTABLE} functions returning true, which Citus
     * folds away on the coordinator, so the refusal shown is the next one in line. (Declared {@code IMMUTABLE} but
     * left as they are, Citus would evaluate them on the coordinator at planning: {@code claim_lost()} then raises.)
     */
    static Map<String, Verdict> explainAdvanceWithoutItsFunctions(CitusDatabase db) throws Exception {
        Map<String, Verdict> out = new LinkedHashMap<>();
        try (Connection c = db.cluster().connect(db.cluster().ports().get(0), db.databaseName())) {
            c.setAutoCommit(false);
            try (java.sql.Statement st = c.createStatement()) {
                st.execute("SET LOCAL citus.enable_ddl_propagation = off");
                List<String> signatures = new java.util.ArrayList<>();
                try (PreparedStatement ps = c.prepareStatement("SELECT 'coop.' || proname || '('"
                        + " || pg_get_function_arguments(oid) || ')' FROM pg_proc"
                        + " WHERE pronamespace = 'coop'::regnamespace AND proname = ANY(?)")) {
                    ps.setArray(1, c.createArrayOf("text", ADVANCE_FUNCTIONS.toArray()));
                    try (ResultSet rs = ps.executeQuery()) {
                        while (rs.next()) {
                            signatures.add(rs.getString(1));
                        }
                    }
                }
                for (String signature : signatures) {
                    st.execute("CREATE OR REPLACE FUNCTION " + signature // signatures from pg_proc, not input
                            + " RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT true'");
                }
            }
            for (String className : List.of("dev.coop.internal.store.AdvanceSql",
                    "dev.coop.internal.store.RoundAdvanceSql")) {
                Class<?> type = Class.forName(className);
                for (Field f : type.getDeclaredFields()) {
                    if (Modifier.isStatic(f.getModifiers()) && f.getType() == String.class) {
                        f.setAccessible(true);
                        String sql = SCHEMA.sql(((String) f.get(null)).replace("{reserve}", "NULL")).strip();
                        if (isStatement(sql)) {
                            String name = type.getSimpleName() + "." + f.getName();
                            out.put(name, explain(c, name, "advance", sql));
                        }
                    }
                }
            }
            c.rollback();
        }
        return out;
    }

    /** The verdicts of every statement, by {@code Class.FIELD}. */
    static Map<String, Verdict> explainAll(CitusDatabase db) throws Exception {
        Map<String, Verdict> out = new LinkedHashMap<>();
        // a plain connection: HikariCP retires a pooled one on SQLSTATE 0A000, which is how Citus refuses
        try (Connection c = db.cluster().connect(db.cluster().ports().get(0), db.databaseName())) {
            c.setAutoCommit(false);
            for (Map.Entry<String, String> e : CLASSES.entrySet()) {
                Class<?> type = Class.forName(e.getKey());
                for (Field f : type.getDeclaredFields()) {
                    if (!Modifier.isStatic(f.getModifiers()) || f.getType() != String.class) {
                        continue;
                    }
                    f.setAccessible(true);
                    String template = ((String) f.get(null)).replace("{reserve}", "NULL");
                    String name = type.getSimpleName() + "." + f.getName();
                    if (name.equals("ClaimSql.CLAIM")) { // its selections, as RunClaims fills them in
                        put(out, c, name + " by saga", e.getValue(), template.formatted(BY_SAGA));
                        put(out, c, name + " by id", e.getValue(), template.formatted(BY_ID));
                        // a hint for the claim: the same reclaim with the root bound in every table's filter
                        put(out, c, name + " by id, root bound in every filter", e.getValue(),
                                template.formatted(BY_ID).replace("= c.root_id", "= ?::uuid"));
                    } else {
                        put(out, c, name, e.getValue(), template);
                    }
                }
            }
        }
        return out;
    }

    private static final String BY_SAGA = "r.saga = ? AND r.saga_version = ? AND r.status = 'RUNNABLE'"
            + " AND r.runnable_at <= statement_timestamp() ORDER BY r.priority DESC, r.runnable_at";
    private static final String BY_ID = "r.root_id = ? AND r.id = ? AND r.status = 'RUNNABLE' AND r.runnable_at <= {now}";
    private static final Pattern PLACEHOLDER = Pattern.compile("\\{[a-zA-Z]+\\}|%[sd]");

    private static void put(Map<String, Verdict> out, Connection c, String name, String area, String template)
            throws SQLException {
        String sql = SCHEMA.sql(template).strip();
        if (isStatement(sql)) {
            out.put(name, explain(c, name, area, sql));
            c.rollback();
        }
    }

    private static boolean isStatement(String sql) {
        String head = sql.length() < 8 ? "" : sql.substring(0, 8).toUpperCase(java.util.Locale.ROOT);
        return (head.startsWith("SELECT") || head.startsWith("WITH") || head.startsWith("INSERT")
                || head.startsWith("UPDATE") || head.startsWith("DELETE")) && !PLACEHOLDER.matcher(sql).find()
                && !sql.replaceAll("'[^']*'", "").contains(";");
    }

    /** The verdict of {@code sql} as sent (its schema filled in), planned with {@link #bind}'s values. */
    static Verdict explainSent(Connection c, String name, String sql) throws SQLException {
        Verdict v = explain(c, name, "as sent", sql);
        c.rollback();
        return v;
    }

    private static Verdict explain(Connection c, String name, String area, String sql) throws SQLException {
        java.sql.Savepoint before = c.setSavepoint();
        try (PreparedStatement ps = c.prepareStatement("EXPLAIN " + sql)) {
            bind(c, sql, ps);
            StringBuilder plan = new StringBuilder();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    plan.append(rs.getString(1)).append('\n');
                }
            }
            Matcher m = TASKS.matcher(plan);
            int tasks = 0;
            boolean any = false;
            while (m.find()) {
                tasks = Math.max(tasks, Integer.parseInt(m.group(1)));
                any = true;
            }
            return new Verdict(name, area, any ? tasks : 0, null);
        } catch (SQLException e) {
            c.rollback(before);
            String message = e.getSQLState() + " " + e.getMessage().lines().findFirst().orElse("")
                    .replace("ERROR: ", "");
            return new Verdict(name, area, -1, message);
        }
    }

    /** Binds each parameter a value of its described type; the statement is planned, never run. */
    private static void bind(Connection c, String sql, PreparedStatement explain) throws SQLException {
        ParameterMetaData meta;
        try (PreparedStatement raw = c.prepareStatement(sql)) {
            meta = raw.getParameterMetaData();
            for (int i = 1; i <= meta.getParameterCount(); i++) {
                String type = meta.getParameterTypeName(i);
                switch (type) {
                    case "uuid" -> explain.setObject(i, ROOT);
                    case "text", "varchar", "name" -> explain.setString(i, "{}"); // also valid JSON
                    case "int4", "int2" -> explain.setInt(i, 1);
                    case "int8" -> explain.setLong(i, 1L);
                    case "bool" -> explain.setBoolean(i, false);
                    case "timestamptz" -> explain.setObject(i, OffsetDateTime.now());
                    case "_uuid" -> explain.setArray(i, c.createArrayOf("uuid", new Object[]{ROOT}));
                    case "_text" -> explain.setArray(i, c.createArrayOf("text", new Object[]{"x"}));
                    case "_int4" -> explain.setArray(i, c.createArrayOf("int4", new Object[]{1}));
                    default -> explain.setNull(i, Types.OTHER);
                }
            }
        }
    }
}
