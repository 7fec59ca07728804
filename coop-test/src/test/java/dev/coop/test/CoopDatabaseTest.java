package dev.coop.test;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.DriverManager;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class CoopDatabaseTest {

    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase(4);

    @BeforeAll
    static void create_a_table(DataSource dataSource) throws Exception {
        Sql.execute(dataSource, "CREATE TABLE greeting (text text NOT NULL)");
        Sql.execute(dataSource, "INSERT INTO greeting VALUES ('hello')");
    }

    @Test
    void a_data_source_parameter_is_the_shared_pool_on_the_class_database(DataSource dataSource)
            throws Exception {
        assertThat(dataSource).isSameAs(db.dataSource());
        assertThat(((HikariDataSource) dataSource).getMaximumPoolSize()).isEqualTo(4);
        assertThat(Sql.text(dataSource, "SELECT current_database()")).isEqualTo(db.databaseName());
    }

    @Test
    void before_all_methods_can_take_the_data_source_too(DataSource dataSource) throws Exception {
        assertThat(Sql.text(dataSource, "SELECT text FROM greeting")).isEqualTo("hello");
    }

    @Test
    void the_database_is_named_after_the_test_class() {
        assertThat(db.databaseName()).startsWith("coop_database_test_");
        assertThat(db.server()).isSameAs(CoopPostgres.shared());
    }

    @Test
    void new_data_source_opens_a_separate_pool_on_the_same_database() throws Exception {
        HikariDataSource engine = db.newDataSource(2);

        assertThat(engine).isNotSameAs(db.dataSource());
        assertThat(engine.getMaximumPoolSize()).isEqualTo(2);
        assertThat(Sql.text(engine, "SELECT text FROM greeting")).isEqualTo("hello");
    }

    @Test
    void the_jdbc_url_connects_to_the_class_database() throws Exception {
        CoopPostgres server = db.server();
        try (Connection connection = DriverManager.getConnection(db.jdbcUrl(), server.user(),
                server.password())) {
            assertThat(Sql.text(connection, "SELECT current_database()")).isEqualTo(db.databaseName());
        }
    }

    @Nested
    class A_nested_class {

        @Test
        void shares_the_database_of_the_enclosing_class(DataSource dataSource) throws Exception {
            assertThat(dataSource).isSameAs(db.dataSource());
            assertThat(Sql.text(dataSource, "SELECT text FROM greeting")).isEqualTo("hello");
        }
    }
}
