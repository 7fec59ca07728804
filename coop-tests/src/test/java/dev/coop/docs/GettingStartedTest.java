package dev.coop.docs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.test.CoopDatabase;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Runs the README's getting-started program, as a user would, against the embedded PostgreSQL. */
class GettingStartedTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    @Test
    void the_getting_started_program_runs_and_prints_the_tree_and_the_distributed_stack_trace(DataSource dataSource)
            throws Exception {
        PrintStream out = System.out;
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        System.setOut(new PrintStream(printed, true, StandardCharsets.UTF_8));
        try {
            GettingStarted.main(new String[]{db.jdbcUrl(), db.server().user(), db.server().password()});
        } finally {
            System.setOut(out);
        }
        String text = printed.toString(StandardCharsets.UTF_8);
        out.print(text);
        assertThat(text).contains("Customer acc-1 is ready", "ada: COMMITTED, bob: ROLLED_BACK", "crm-sync",
                "contracts", "Account blocked-2 is blocked", "IllegalStateException");
        try (Connection c = dataSource.getConnection();
                ResultSet rs = c.createStatement().executeQuery("SELECT string_agg(id, ',') FROM customer")) {
            rs.next();
            assertThat(rs.getString(1)).isEqualTo("acc-1"); // bob's customer was compensated
        }
    }
}
