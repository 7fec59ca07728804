import dev.coop.test.CoopDatabase;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Runs README's getting-started program (copied into src/main/java by check.sh) against an embedded PostgreSQL. */
class GettingStartedIT {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    @Test
    void the_readme_program_runs() throws Exception {
        GettingStarted.main(new String[] {db.jdbcUrl(), db.server().user(), db.server().password()});
    }
}
