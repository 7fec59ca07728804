package dev.coop.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import org.junit.jupiter.api.Test;

class CoopPostgresTest {

    private static final String VALID_NAME = "[a-z_][a-z0-9_]{0,62}";

    private final CoopPostgres server = CoopPostgres.shared();

    @Test
    void shared_is_one_server_per_jvm() {
        assertThat(CoopPostgres.shared()).isSameAs(server);
    }

    @Test
    void the_embedded_server_is_tuned_for_tests_and_benchmarks() throws Exception {
        assumeTrue(server.embedded(), "only the embedded server's settings are the kit's to choose");
        try (Connection connection = server.connect(server.adminDatabase())) {
            assertThat(Sql.text(connection, "SHOW max_connections")).isEqualTo("400");
            assertThat(Sql.text(connection, "SHOW fsync")).isEqualTo("off");
            assertThat(Sql.text(connection, "SHOW synchronous_commit")).isEqualTo("off");
            assertThat(Sql.text(connection, "SHOW full_page_writes")).isEqualTo("off");
            assertThat(Sql.text(connection, "SHOW shared_buffers")).isEqualTo("256MB");
        }
    }

    @Test
    void created_databases_get_unique_valid_names_from_the_prefix() throws Exception {
        String first = server.createDatabase("My Test-Class!");
        String second = server.createDatabase("My Test-Class!");
        String longName = server.createDatabase("x".repeat(200));
        try {
            assertThat(first).matches(VALID_NAME).startsWith("my_test_class_").isNotEqualTo(second);
            assertThat(second).matches(VALID_NAME).startsWith("my_test_class_");
            assertThat(longName).matches(VALID_NAME).hasSizeLessThanOrEqualTo(63).startsWith("xxxx");
            try (Connection connection = server.connect(first)) {
                assertThat(Sql.text(connection, "SELECT current_database()")).isEqualTo(first);
                assertThat(Sql.text(connection, "SHOW server_encoding")).isEqualTo("UTF8");
            }
        } finally {
            server.dropDatabase(first);
            server.dropDatabase(second);
            server.dropDatabase(longName);
        }
        assertThat(Sql.databaseExists(server, first)).isFalse();
    }

    @Test
    void prefixes_are_reduced_to_lower_case_letters_digits_and_underscores() {
        assertThat(CoopPostgres.sanitize("CoopDatabaseTest")).isEqualTo("coop_database_test");
        assertThat(CoopPostgres.sanitize("Outer$Inner Test")).isEqualTo("outer_inner_test");
        assertThat(CoopPostgres.sanitize("9lives")).isEqualTo("db_9lives");
        assertThat(CoopPostgres.sanitize("\"; DROP DATABASE postgres; --"))
                .isEqualTo("drop_database_postgres");
        assertThat(CoopPostgres.sanitize("Ünïcödé")).isEqualTo("n_c_d");
        assertThat(CoopPostgres.sanitize("")).isEqualTo("coop");
        assertThat(CoopPostgres.sanitize(null)).isEqualTo("coop");
    }

    @Test
    void drop_database_accepts_only_plain_identifiers() {
        assertThatThrownBy(() -> server.dropDatabase("x\"; DROP DATABASE postgres; --"))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> server.dropDatabase("Mixed")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> server.dropDatabase("a".repeat(64)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> server.dropDatabase(server.adminDatabase()))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void drop_database_ignores_a_missing_database_and_ends_open_sessions() throws Exception {
        server.dropDatabase("coop_never_created_database");
        String name = server.createDatabase("busy");
        try (Connection open = server.connect(name)) {
            server.dropDatabase(name);

            assertThat(Sql.databaseExists(server, name)).isFalse();
            assertThat(open.isValid(2)).isFalse();
        }
    }

    @Test
    void data_sources_are_small_auto_commit_pools() throws Exception {
        String name = server.createDatabase("pool");
        try (HikariDataSource pool = server.dataSource(name, 3, "coop-pool-test")) {
            assertThat(pool.getMaximumPoolSize()).isEqualTo(3);
            assertThat(pool.getMinimumIdle()).isZero();
            assertThat(pool.getConnectionTimeout()).isEqualTo(10_000);
            assertThat(pool.getPoolName()).isEqualTo("coop-pool-test");
            try (Connection connection = pool.getConnection()) {
                assertThat(connection.getAutoCommit()).isTrue();
                assertThat(Sql.text(connection, "SELECT current_database()")).isEqualTo(name);
                assertThat(Sql.text(connection, "SHOW application_name")).isEqualTo("coop-pool-test");
            }
        } finally {
            server.dropDatabase(name);
        }
    }

    @Test
    void jdbc_urls_of_an_external_server_replace_only_the_database() {
        CoopPostgres external = CoopPostgres.external(
                "jdbc:postgresql://db.example:6543/postgres?sslmode=require&tcpKeepAlive=true", "alice",
                "secret");

        assertThat(external.embedded()).isFalse();
        assertThat(external.user()).isEqualTo("alice");
        assertThat(external.password()).isEqualTo("secret");
        assertThat(external.adminDatabase()).isEqualTo("postgres");
        assertThat(external.jdbcUrl("orders_1_abc"))
                .isEqualTo(
                        "jdbc:postgresql://db.example:6543/orders_1_abc?sslmode=require&tcpKeepAlive=true");
        assertThat(external.toString()).doesNotContain("secret");
    }

    @Test
    void external_urls_without_a_database_use_postgres_for_administration() {
        CoopPostgres external = CoopPostgres.external("jdbc:postgresql://h1:5432,h2:5433", "postgres", "");

        assertThat(external.adminDatabase()).isEqualTo("postgres");
        assertThat(external.jdbcUrl("x")).isEqualTo("jdbc:postgresql://h1:5432,h2:5433/x");
        assertThat(CoopPostgres.external("jdbc:postgresql://[::1]/?ssl=false", "u", "").jdbcUrl("y"))
                .isEqualTo("jdbc:postgresql://[::1]/y?ssl=false");
    }

    @Test
    void external_urls_must_be_postgresql_urls_with_a_host() {
        assertThatThrownBy(() -> CoopPostgres.external("jdbc:mysql://h/db", "u", ""))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("COOP_JDBC_URL");
        assertThatThrownBy(() -> CoopPostgres.external("jdbc:postgresql:///db", "u", ""))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void jdbc_urls_reject_names_that_are_not_plain_identifiers() {
        assertThatThrownBy(() -> server.jdbcUrl("db?user=other"))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
