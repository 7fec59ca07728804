package dev.coop.cli;

import dev.coop.CoopClient;
import dev.coop.failure.CoopValidationException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.postgresql.ds.PGSimpleDataSource;

/** The database the command line talks to: a plain (unpooled) data source, and the checks before using it. */
final class Database {
    private static final String SCHEME = "jdbc:postgresql:";

    final String url;
    final String schema;
    final DataSource dataSource;
    /** A client that never migrates. */
    final CoopClient client;

    private Database(String url, String schema, DataSource dataSource) {
        this.url = url;
        this.schema = schema;
        this.dataSource = dataSource;
        try {
            this.client = CoopClient.builder(dataSource).schema(schema).migrate(false).build();
        } catch (CoopValidationException e) {
            throw new CliException(CoopCli.EXIT_USAGE, e.getMessage(), e);
        }
    }

    /** A data source for the URL; nothing is connected yet. */
    static Database of(String url, String user, String password, String schema) {
        if (url == null || url.isBlank()) {
            throw new CliException(CoopCli.EXIT_USAGE,
                    "No database: pass --url or set COOP_JDBC_URL (e.g. jdbc:postgresql://localhost:5432/postgres)");
        }
        String u = url.strip();
        if (!u.regionMatches(true, 0, SCHEME, 0, SCHEME.length())) {
            throw new CliException(CoopCli.EXIT_USAGE,
                    "Not a PostgreSQL JDBC URL: '" + masked(u) + "' (expected jdbc:postgresql://host:port/database)");
        }
        PGSimpleDataSource ds = new PGSimpleDataSource();
        try {
            ds.setURL(u);
        } catch (IllegalArgumentException e) {
            throw new CliException(CoopCli.EXIT_USAGE, "Not a valid PostgreSQL JDBC URL: '" + masked(u) + "': "
                    + e.getMessage(), e);
        }
        if (!u.contains("connectTimeout=")) {
            ds.setConnectTimeout(5);
        }
        if (!u.contains("tcpKeepAlive=")) {
            ds.setTcpKeepAlive(true); // a connection cut silently is noticed (with the client's databaseTimeout)
        }
        if (!u.contains("ApplicationName=")) {
            ds.setApplicationName("coop-cli");
        }
        if (user != null && !user.isBlank()) {
            ds.setUser(user);
        }
        if (password != null) {
            ds.setPassword(password);
        }
        return new Database(u, schema, ds);
    }

    /**
     * Connects, and fails with a clear message when the server cannot be reached or the schema holds no Coop
     * tables. Inspection and operations never create the schema: that is {@code coop migrate}.
     */
    void requireSchema() {
        Integer version = schemaVersion();
        if (version == null) {
            throw new CliException(CoopCli.EXIT_FAILURE, "The database " + databaseName() + " has no Coop schema '"
                    + schema + "': create it with 'coop migrate' (or 'coop migrate --print' for the SQL), or pass"
                    + " --schema");
        }
    }

    /** The schema's migration version; null when it has no Coop tables. */
    Integer schemaVersion() {
        try (Connection c = connect();
                PreparedStatement ps = c.prepareStatement(
                        "SELECT to_regclass(?) IS NOT NULL AND to_regclass(?) IS NOT NULL")) {
            ps.setString(1, quoted(schema) + ".run");
            ps.setString(2, quoted(schema) + ".schema_version");
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                if (!rs.getBoolean(1)) {
                    return null;
                }
            }
            try (PreparedStatement v = c.prepareStatement(
                    "SELECT coalesce(max(version), 0) FROM " + quoted(schema) + ".schema_version");
                    ResultSet rs = v.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        } catch (SQLException e) {
            throw failure("read the schema '" + schema + "'", e);
        }
    }

    Connection connect() throws SQLException {
        try {
            return dataSource.getConnection();
        } catch (SQLException e) {
            throw new CliException(CoopCli.EXIT_UNREACHABLE, "Cannot connect to " + masked(url) + ": " + describe(e),
                    e);
        }
    }

    /** A store failure as a one-line error: unreachable servers apart from everything else. */
    CliException failure(String what, SQLException e) {
        String state = e.getSQLState();
        if (state != null && (state.startsWith("08") || state.startsWith("28") || state.equals("3D000"))) {
            return new CliException(CoopCli.EXIT_UNREACHABLE, "Cannot connect to " + masked(url) + ": " + describe(e),
                    e);
        }
        return new CliException(CoopCli.EXIT_FAILURE, "Could not " + what + ": " + describe(e), e);
    }

    private String databaseName() {
        int slash = url.indexOf('/', SCHEME.length() + 2);
        if (slash < 0) {
            return masked(url);
        }
        String rest = url.substring(slash + 1);
        int q = rest.indexOf('?');
        return q < 0 ? rest : rest.substring(0, q);
    }

    /** The message of an SQL failure, with the root cause when the driver's own message says little. */
    static String describe(Throwable e) {
        String message = oneLine(e.getMessage());
        Throwable root = e;
        java.util.Set<Throwable> seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        seen.add(e);
        while (root.getCause() != null && seen.size() < 1_000 && seen.add(root.getCause())) { // a cycle ends it
            root = root.getCause();
        }
        if (root != e && root.getMessage() != null && !message.contains(oneLine(root.getMessage()))) {
            message += " (" + root.getClass().getSimpleName() + ": " + oneLine(root.getMessage()) + ")";
        }
        return message;
    }

    private static final java.util.regex.Pattern PASSWORD_PARAMETER = java.util.regex.Pattern
            .compile("(?i)(password=)[^&;\\s]*");
    private static final java.util.regex.Pattern USER_INFO = java.util.regex.Pattern
            .compile("((?://)?[^/@\\s:]+:)[^@/\\s]*@");

    /** {@code text} with passwords in URLs ({@code ?password=...}, {@code user:pw@host}) replaced by {@code ***}. */
    static String masked(String text) {
        if (text == null) {
            return null;
        }
        String s = PASSWORD_PARAMETER.matcher(text).replaceAll("$1***");
        return USER_INFO.matcher(s).replaceAll("$1***@");
    }

    /** The passwords written into {@code url}, to be masked wherever they appear (a driver may echo them). */
    static java.util.List<String> passwordsIn(String url) {
        java.util.List<String> found = new java.util.ArrayList<>();
        if (url != null) {
            var p = java.util.regex.Pattern.compile("(?i)password=([^&;\\s]+)").matcher(url);
            while (p.find()) {
                found.add(p.group(1));
            }
            var u = java.util.regex.Pattern.compile("//[^/@\\s:]*:([^@/\\s]+)@").matcher(url);
            while (u.find()) {
                found.add(u.group(1));
            }
        }
        return found;
    }

    static String oneLine(String s) {
        if (s == null) {
            return "";
        }
        return s.strip().replaceAll("\\s*\\R\\s*", " ");
    }

    private static String quoted(String identifier) {
        return '"' + identifier + '"';
    }
}
