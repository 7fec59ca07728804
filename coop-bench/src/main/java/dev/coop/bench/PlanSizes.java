package dev.coop.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.LinkedHashMap;
import java.util.Properties;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The size of a statement's generic plan: {@code EXPLAIN (GENERIC_PLAN, FORMAT JSON)} of its normalised text from
 * pg_stat_statements (PostgreSQL 16 and later plan {@code $n} parameters without values), counted as plan nodes
 * (sub-plans and CTEs included) and the distinct tables and indexes the plan names. What executor start-up
 * initialises per execution grows with both; triggers and the indexes a write maintains do not show in a plan.
 * The text is the server's own normalisation of the benchmark's statements, explained, never executed.
 */
final class PlanSizes implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final Connection connection;
    private final boolean supported;

    /**
     * Connects to the run's database in the simple query protocol: the extended one would send the text's
     * {@code $n} as parameters of its own and find no values bound.
     */
    PlanSizes(BenchDb db) {
        this.supported = db.longValue("SELECT current_setting('server_version_num')::int") >= 160000;
        Properties p = new Properties();
        p.setProperty("user", db.server.user());
        p.setProperty("password", db.server.password());
        p.setProperty("ApplicationName", "coop-bench-admin");
        p.setProperty("preferQueryMode", "simple");
        try {
            this.connection = DriverManager.getConnection(db.server.jdbcUrl(db.name), p);
        } catch (SQLException e) {
            throw new IllegalStateException("Could not connect to " + db.name, e);
        }
    }

    @Override
    public void close() {
        try {
            connection.close();
        } catch (SQLException ignored) {
            // closing anyway
        }
    }

    Map<String, Object> of(String query) {
        Map<String, Object> m = new LinkedHashMap<>();
        if (!supported) {
            m.put("skipped", "EXPLAIN (GENERIC_PLAN) needs PostgreSQL 16 or later");
            return m;
        }
        try {
            String plan;
            try (Statement st = connection.createStatement();
                    ResultSet rs = st.executeQuery("EXPLAIN (GENERIC_PLAN, FORMAT JSON) " + explainable(query))) {
                rs.next();
                plan = rs.getString(1);
            }
            JsonNode root = JSON.readTree(plan).get(0).get("Plan");
            Set<String> relations = new TreeSet<>();
            Set<String> indexes = new TreeSet<>();
            m.put("nodes", count(root, relations, indexes));
            m.put("relations", relations.size() + indexes.size());
            m.put("tables", String.join(", ", relations));
            m.put("indexes", String.join(", ", indexes));
        } catch (SQLException | RuntimeException | java.io.IOException e) {
            String msg = e.getMessage() == null ? e.toString() : e.getMessage();
            int colon = msg.lastIndexOf("ERROR:");
            m.put("error", (colon >= 0 ? msg.substring(colon) : msg).lines().findFirst().orElse(msg));
        }
        return m;
    }

    /**
     * The normalised text made plannable where normalisation put a parameter where the grammar wants a literal: a
     * typed literal ({@code interval '1 second'} became {@code interval $5}) and extract's field (the plan is the
     * same for any field).
     */
    static String explainable(String query) {
        return query.replaceAll("(?i)\\binterval \\$(\\d+)", "\\$$1::interval")
                .replaceAll("(?i)\\bextract\\(\\s*\\$\\d+\\s+FROM", "extract(epoch FROM");
    }

    private static int count(JsonNode node, Set<String> relations, Set<String> indexes) {
        if (node.has("Relation Name")) {
            relations.add(node.get("Relation Name").asText());
        }
        if (node.has("Index Name")) {
            indexes.add(node.get("Index Name").asText());
        }
        int n = 1;
        JsonNode plans = node.get("Plans");
        if (plans != null) {
            for (JsonNode child : plans) {
                n += count(child, relations, indexes);
            }
        }
        return n;
    }
}
