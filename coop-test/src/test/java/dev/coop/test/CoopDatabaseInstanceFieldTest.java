package dev.coop.test;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class CoopDatabaseInstanceFieldTest {

    private static final List<String> NAMES = new CopyOnWriteArrayList<>();

    @RegisterExtension
    final CoopDatabase db = new CoopDatabase(2);

    @AfterAll
    static void every_test_had_its_own_database_and_it_was_dropped() throws Exception {
        assertThat(NAMES).hasSize(2).doesNotHaveDuplicates();
        for (String name : NAMES) {
            assertThat(Sql.databaseExists(CoopPostgres.shared(), name)).as(name).isFalse();
        }
    }

    @Test
    void a_first_test_gets_a_fresh_database(DataSource dataSource) throws Exception {
        useFreshDatabase(dataSource);
    }

    @Test
    void a_second_test_gets_another_fresh_database(DataSource dataSource) throws Exception {
        useFreshDatabase(dataSource);
    }

    private void useFreshDatabase(DataSource dataSource) throws Exception {
        assertThat(db.databaseName()).startsWith("coop_database_instance_field_test_");
        assertThat(Sql.text(dataSource, "SELECT current_database()")).isEqualTo(db.databaseName());
        Sql.execute(dataSource, "CREATE TABLE made_by_this_test (id int)");
        NAMES.add(db.databaseName());
    }
}
