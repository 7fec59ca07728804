import dev.coop.test.CoopDatabase;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Runs the program against a fresh database of the embedded PostgreSQL that coop-test starts. */
class GettingStartedTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    @Test
    void the_program_runs() throws Exception {
        GettingStarted.main(new String[] {db.jdbcUrl(), db.server().user(), db.server().password()});
    }
}
