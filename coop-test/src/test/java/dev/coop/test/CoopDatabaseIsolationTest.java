package dev.coop.test;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class CoopDatabaseIsolationTest {

    @RegisterExtension
    static final CoopDatabase first = new CoopDatabase(2);

    @RegisterExtension
    static final CoopDatabase second = new CoopDatabase(2);

    @Test
    void each_extension_gets_a_database_of_its_own() throws Exception {
        assertThat(first.databaseName()).isNotEqualTo(second.databaseName());
        assertThat(Sql.text(first.dataSource(), "SELECT current_database()")).isEqualTo(first.databaseName());
        assertThat(Sql.text(second.dataSource(), "SELECT current_database()"))
                .isEqualTo(second.databaseName());
    }

    @Test
    void a_table_created_in_one_database_is_absent_in_the_other() throws Exception {
        Sql.execute(first.dataSource(), "CREATE TABLE only_in_first (id int)");

        assertThat(Sql.text(first.dataSource(), "SELECT to_regclass('only_in_first') IS NOT NULL"))
                .isEqualTo("t");
        assertThat(Sql.text(second.dataSource(), "SELECT to_regclass('only_in_first') IS NOT NULL"))
                .isEqualTo("f");
    }
}
