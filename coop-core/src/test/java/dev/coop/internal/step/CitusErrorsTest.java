package dev.coop.internal.step;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.SQLException;
import org.junit.jupiter.api.Test;
import org.postgresql.util.PSQLException;
import org.postgresql.util.ServerErrorMessage;

/**
 * Citus's errors when a worker's connection breaks mid-transaction, as the driver hands them to Coop: each built
 * from the fields the coordinator sent (severity, SQLSTATE, message, context, file, routine), copied from the test
 * cluster (Citus 13.2.2; a worker stopped with {@code pg_ctl stop -m immediate} in the middle of a transaction,
 * docs/guide/citus.md "Faults"). {@code CitusWorkerRestartTest} checks the same shapes as the cluster raises them.
 */
class CitusErrorsTest {

    /** An error as pgjdbc builds it from the server's fields. */
    static PSQLException server(String state, String message, String where, String routine) {
        StringBuilder fields = new StringBuilder().append("SERROR\0VERROR\0C").append(state).append('\0')
                .append('M').append(message).append('\0');
        if (where != null) {
            fields.append('W').append(where).append('\0');
        }
        fields.append('R').append(routine).append('\0');
        return new PSQLException(new ServerErrorMessage(fields.toString()));
    }

    @Test
    void a_commit_after_a_worker_the_transaction_read_from_went_away_is_database_trouble() {
        // COMMIT (or PREPARE) of a transaction that read both workers (the claim's candidates) and wrote the live one
        PSQLException e = server("XX000", "failure on connection marked as essential: 127.0.0.1:56713", null,
                "CheckRemoteTransactionsHealth");
        assertTrouble(e);
    }

    @Test
    void a_one_phase_commit_that_failed_on_the_worker_is_database_trouble() {
        PSQLException e = server("XX000", "could not commit transaction for shard 102011 on at least one active node",
                null, "ErrorIfPostCommitFailedShardPlacements");
        assertTrouble(e);
    }

    @Test
    void a_prepare_that_failed_on_the_worker_is_database_trouble() {
        PSQLException e = server("XX000",
                "failed to prepare transaction 'citus_0_4242_7_3' on host 127.0.0.1:56713", null,
                "FinishRemoteTransactionPrepare");
        assertTrouble(e);
    }

    @Test
    void a_savepoint_or_release_on_a_broken_worker_connection_is_database_trouble() {
        // SAVEPOINT coop_join_check (a finishing advance) or RELEASE, sent by Citus to every worker of the transaction
        PSQLException ssl = server("XX000", "SSL SYSCALL error: EOF detected\ninvalid socket",
                "while executing command on 127.0.0.1:56713", "ReportResultError");
        PSQLException plain = server("XX000",
                "server closed the connection unexpectedly\n\tThis probably means the server terminated abnormally"
                        + "\n\tbefore or while processing the request.",
                "while executing command on 127.0.0.1:56713", "ReportResultError");
        assertTrouble(ssl);
        assertTrouble(plain);
    }

    @Test
    void citus_connection_errors_with_their_own_state_stay_database_trouble() {
        assertTrouble(server("08006", "connection to the remote node postgres@127.0.0.1:56713 failed with the"
                + " following error: connection not open", null, "ReportConnectionError"));
        assertTrouble(server("08006", "could not establish any connections to the node 127.0.0.1:56713 after"
                + " 30000 ms", null, "ManageWorkerPool"));
        assertTrouble(server("57P01", "terminating connection due to administrator command",
                "while executing command on 127.0.0.1:56713", "ReportResultError"));
        assertTrouble(server("40P01", "deadlock detected", "while executing command on 127.0.0.1:56713",
                "ReportResultError"));
    }

    @Test
    void wrapped_in_a_step_s_own_exception_it_is_still_trouble() {
        RuntimeException wrapped = new RuntimeException("the step's write failed",
                server("XX000", "SSL SYSCALL error: EOF detected", "while executing command on 127.0.0.1:56713",
                        "ReportResultError"));
        assertThat(Throwables.isInfrastructure(wrapped)).isTrue();
    }

    @Test
    void users_errors_stay_the_step_s() {
        // XX000 with other words: a user's function, or a Citus refusal of a statement
        assertNotTrouble(server("XX000", "could not create distributed plan", null, "CreateDistributedPlan"));
        assertNotTrouble(server("XX000", "cache lookup failed for type 4242", null, "format_type_extended"));
        // Citus's texts under a user's own state (RAISE with a message that happens to read so)
        assertNotTrouble(server("P0001", "SSL SYSCALL error: EOF detected", null, "exec_stmt_raise"));
        assertNotTrouble(server("P0001", "failure on connection marked as essential: x", null, "exec_stmt_raise"));
        // a transaction aborted by an earlier error: the earlier error decides, not this one
        assertNotTrouble(server("25P02",
                "current transaction is aborted, commands ignored until end of transaction block", null,
                "exec_simple_query"));
        assertNotTrouble(server("23505", "duplicate key value violates unique constraint \"t_pkey\"",
                "while executing command on 127.0.0.1:56712", "ReportResultError"));
        assertNotTrouble(new SQLException("server closed the connection unexpectedly", "XX001"));
        assertNotTrouble(new SQLException(null, "XX000"));
    }

    @Test
    void a_plain_sql_exception_with_citus_s_text_and_state_is_trouble_too() {
        assertTrouble(new SQLException("failure on connection marked as essential: 10.0.0.7:5432", "XX000"));
    }

    private static void assertTrouble(SQLException e) {
        assertThat(Throwables.isInfrastructure(e)).as("infrastructure: %s", e.getMessage()).isTrue();
        assertThat(Throwables.isBookkeepingTrouble(e)).as("bookkeeping trouble: %s", e.getMessage()).isTrue();
    }

    private static void assertNotTrouble(SQLException e) {
        assertThat(Throwables.isInfrastructure(e)).as("infrastructure: %s", e.getMessage()).isFalse();
        assertThat(Throwables.isBookkeepingTrouble(e)).as("bookkeeping trouble: %s", e.getMessage()).isFalse();
    }
}
