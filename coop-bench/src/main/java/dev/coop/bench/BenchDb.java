package dev.coop.bench;

import com.zaxxer.hikari.HikariDataSource;
import dev.coop.test.CoopPostgres;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * A fresh database on the shared server ({@link CoopPostgres#shared()}: embedded, or {@code COOP_JDBC_URL}), its
 * connection pools, and a separate admin connection for setup, verification and statistics (never one of the
 * measured pool's connections).
 */
final class BenchDb implements AutoCloseable {
    final CoopPostgres server;
    final String name;
    private final boolean keep;
    private final List<HikariDataSource> pools = new ArrayList<>();
    private Connection admin;

    private BenchDb(CoopPostgres server, String name, boolean keep) {
        this.server = server;
        this.name = name;
        this.keep = keep;
    }

    private static CoopPostgres chosen;

    /**
     * The benchmark's server: {@code COOP_JDBC_URL}'s as it is configured; else an embedded one, with durable commits
     * (fsync, synchronous_commit and full_page_writes on, as users run) unless {@code durable} is false (then the
     * shared test server, all three off).
     */
    static synchronized CoopPostgres server(boolean durable) {
        if (chosen == null) {
            String url = System.getenv(CoopPostgres.URL_VARIABLE);
            chosen = !durable || (url != null && !url.isBlank())
                    ? CoopPostgres.shared()
                    : CoopPostgres.startEmbedded(durableSettings());
        }
        return chosen;
    }

    /** Whether the embedded durable server preloads pg_stat_statements ({@code --statement-stats}). */
    static volatile boolean statementStats = true;

    /**
     * The embedded durable server's settings: durable commits, and pg_stat_statements preloaded (the zonky binaries
     * ship it) with top-level statements and their planning tracked, so that the side-by-side runs record each
     * statement's server time; its cost (a hash lookup per statement) falls on every system alike.
     */
    private static Map<String, String> durableSettings() {
        Map<String, String> s = new LinkedHashMap<>(Map.of("fsync", "on", "synchronous_commit", "on",
                "full_page_writes", "on"));
        if (statementStats) {
            s.put("shared_preload_libraries", "pg_stat_statements");
            s.put("pg_stat_statements.track", "top");
            s.put("pg_stat_statements.track_planning", "on");
            s.put("pg_stat_statements.max", "10000");
        }
        return s;
    }

    /** An existing database on another server (the Citus cluster's); the caller drops it. */
    static BenchDb existing(CoopPostgres server, String name) {
        return new BenchDb(server, name, true);
    }

    static BenchDb create(String prefix, boolean keep) {
        CoopPostgres server = server(true);
        return new BenchDb(server, server.createDatabase("bench_" + prefix), keep);
    }

    /**
     * Makes every commit of this database's new sessions wait 100 ms before its WAL flush ({@code commit_delay},
     * with {@code commit_siblings} = 0), as with a synchronous standby far away: what batching commits is worth.
     */
    void slowCommits() {
        exec("ALTER DATABASE " + name + " SET commit_delay = 100000"); // a generated name, not input
        exec("ALTER DATABASE " + name + " SET commit_siblings = 0");
    }

    /** A pool of {@code size} connections, all opened before it is returned (no connects inside a timed run). */
    HikariDataSource pool(int size, String poolName) {
        HikariDataSource pool = server.dataSource(name, size, poolName);
        pools.add(pool);
        List<Connection> held = new ArrayList<>();
        try {
            for (int i = 0; i < size; i++) {
                held.add(pool.getConnection());
            }
            for (Connection c : held) {
                c.close();
            }
        } catch (SQLException e) {
            throw new IllegalStateException("Could not open " + size + " connections to " + name, e);
        }
        return pool;
    }

    synchronized Connection admin() {
        try {
            if (admin == null || admin.isClosed()) {
                Properties p = new Properties();
                p.setProperty("user", server.user());
                p.setProperty("password", server.password());
                p.setProperty("ApplicationName", "coop-bench-admin");
                admin = DriverManager.getConnection(server.jdbcUrl(name), p);
                admin.setAutoCommit(true);
            }
            return admin;
        } catch (SQLException e) {
            throw new IllegalStateException("Could not connect to " + name, e);
        }
    }

    void exec(String sql) {
        try (Statement st = admin().createStatement()) {
            st.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException("Failed: " + sql + ": " + e.getMessage(), e);
        }
    }

    long longValue(String sql, Object... params) {
        Object v = value(sql, params);
        return v == null ? 0 : ((Number) v).longValue();
    }

    Object value(String sql, Object... params) {
        List<Map<String, Object>> rows = rows(sql, params);
        return rows.isEmpty() ? null : rows.getFirst().values().iterator().next();
    }

    List<Map<String, Object>> rows(String sql, Object... params) {
        try (PreparedStatement ps = admin().prepareStatement(sql)) {
            for (int i = 0; i < params.length; i++) {
                ps.setObject(i + 1, params[i]);
            }
            List<Map<String, Object>> rows = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                int n = rs.getMetaData().getColumnCount();
                while (rs.next()) {
                    Map<String, Object> row = new LinkedHashMap<>();
                    for (int i = 1; i <= n; i++) {
                        Object o = rs.getObject(i);
                        if (o != null && !(o instanceof Number) && !(o instanceof Boolean)) {
                            o = o.toString();
                        }
                        row.put(rs.getMetaData().getColumnLabel(i), o);
                    }
                    rows.add(row);
                }
            }
            return rows;
        } catch (SQLException e) {
            throw new IllegalStateException("Failed: " + sql + ": " + e.getMessage(), e);
        }
    }

    /** Two-column query as a map (first column as text key). */
    Map<String, Long> counts(String sql, Object... params) {
        Map<String, Long> m = new LinkedHashMap<>();
        for (Map<String, Object> row : rows(sql, params)) {
            var it = row.values().iterator();
            m.put(String.valueOf(it.next()), ((Number) it.next()).longValue());
        }
        return m;
    }

    /** Whether pg_stat_statements can be used (it must be in shared_preload_libraries). */
    boolean pgStatStatements() {
        try (Statement st = admin().createStatement()) {
            st.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
            st.executeQuery("SELECT count(*) FROM pg_stat_statements").close();
            return true;
        } catch (SQLException e) {
            return false;
        }
    }

    @Override
    public void close() {
        for (HikariDataSource p : pools) {
            p.close();
        }
        pools.clear();
        try {
            if (admin != null) {
                admin.close();
            }
        } catch (SQLException ignored) {
            // closing anyway
        }
        if (!keep) {
            server.dropDatabase(name);
        }
    }
}
