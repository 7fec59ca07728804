package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.Payloads.Empty;
import dev.coop.test.CoopDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The hierarchy's operator lock as the root message's row (schema version 30), read from two connections: a
 * transaction that commits a run ({@code commit_allowed}) takes the row {@code FOR KEY SHARE} without waiting, and
 * fails with SQLSTATE 40001 while an operator holds it {@code FOR UPDATE}; committers do not exclude each other; an
 * operator waits for a committer; and a root whose message row is gone (pruned) falls back to the advisory lock,
 * which operators still take first.
 */
class CommitRowLockTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    /** What an operator action takes on its hierarchy's root (Operations.ROOT_ROW_LOCK's statement). */
    static final String OPERATOR_ROW = "SELECT m.id FROM coop.message m WHERE m.id = ANY(?::uuid[]) AND m.root_id = m.id"
            + " ORDER BY m.id FOR UPDATE";

    @BeforeAll
    static void schema(DataSource dataSource) {
        Coop.engine(dataSource).register(Saga.on(Topic.of("row-lock", Empty.class), "row-lock").step("s", step -> {
        }).build()).start().close();
    }

    @Test
    void a_commit_fails_with_40001_while_an_operator_holds_the_root_row(DataSource dataSource) throws SQLException {
        UUID root = rootMessage(dataSource);
        try (Connection operator = transaction(dataSource); Connection committer = transaction(dataSource)) {
            lockAsOperator(operator, root);
            setLockTimeout(committer, "5s"); // a commit that waited would fail with 55P03 instead
            assertThatThrownBy(() -> commitAllowed(committer, root))
                    .isInstanceOfSatisfying(SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("40001"));
        }
    }

    @Test
    void commits_share_the_root_row_and_an_operator_waits_for_them(DataSource dataSource) throws SQLException {
        UUID root = rootMessage(dataSource);
        try (Connection first = transaction(dataSource);
                Connection second = transaction(dataSource);
                Connection operator = transaction(dataSource)) {
            assertThat(commitAllowed(first, root)).isTrue();
            assertThat(commitAllowed(second, root)).as("a second commit of the hierarchy meanwhile").isTrue();
            setLockTimeout(operator, "200ms");
            assertThatThrownBy(() -> lockAsOperator(operator, root)).as("the operator waits for the commits")
                    .isInstanceOfSatisfying(SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("55P03"));
        }
    }

    @Test
    void a_root_without_its_message_row_falls_back_to_the_advisory_lock(DataSource dataSource) throws SQLException {
        UUID root = UUID.randomUUID(); // a hierarchy whose root message is gone
        try (Connection committer = transaction(dataSource)) {
            assertThat(commitAllowed(committer, root)).isTrue();
        }
        try (Connection operator = transaction(dataSource); Connection committer = transaction(dataSource)) {
            try (PreparedStatement ps = operator.prepareStatement(
                    "SELECT pg_advisory_xact_lock(x'636f6f70'::int, hashtext(?))")) {
                ps.setString(1, root.toString());
                ps.execute();
            }
            lockAsOperator(operator, root); // no row: nothing locked, the advisory lock stands alone
            assertThatThrownBy(() -> commitAllowed(committer, root))
                    .isInstanceOfSatisfying(SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("40001"));
        }
    }

    private static UUID rootMessage(DataSource dataSource) throws SQLException {
        UUID root = UUID.randomUUID();
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "INSERT INTO coop.message (id, topic, payload, root_id) VALUES (?, 'row-lock', '{}', ?)")) {
            ps.setObject(1, root);
            ps.setObject(2, root);
            ps.executeUpdate();
        }
        return root;
    }

    private static Connection transaction(DataSource dataSource) throws SQLException {
        Connection c = dataSource.getConnection();
        c.setAutoCommit(false);
        return c;
    }

    private static void setLockTimeout(Connection c, String timeout) throws SQLException {
        try (Statement st = c.createStatement()) {
            st.execute("SET LOCAL lock_timeout = '" + timeout + "'"); // a constant of the test
        }
    }

    private static boolean commitAllowed(Connection c, UUID root) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT coop.commit_allowed(?::uuid, ARRAY[?::uuid], true)")) {
            ps.setObject(1, root);
            ps.setObject(2, root);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        }
    }

    private static void lockAsOperator(Connection c, UUID root) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(OPERATOR_ROW)) {
            ps.setArray(1, c.createArrayOf("uuid", new UUID[]{root}));
            ps.executeQuery().close();
        }
    }
}
