package dev.coop.internal.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A transaction's failure is the error reported even when the connection cannot be set back afterwards: a pool
 * retires a connection on some errors (HikariCP on Citus's SQLSTATE 0A000 and on 08xxx), and restoring auto-commit on
 * it then fails with "Connection is closed", which used to replace the error that said what went wrong.
 */
class TxTest {
    /** A connection whose work fails and which is closed by that failure, as a pool closes one it evicts. */
    static Connection closedByFailure(List<String> calls) {
        boolean[] closed = {false};
        return (Connection) Proxy.newProxyInstance(TxTest.class.getClassLoader(), new Class<?>[]{Connection.class},
                (proxy, method, args) -> {
                    calls.add(method.getName());
                    switch (method.getName()) {
                        case "getAutoCommit" -> {
                            if (closed[0]) {
                                throw new SQLException("Connection is closed");
                            }
                            return !calls.contains("setAutoCommit");
                        }
                        case "setAutoCommit" -> {
                            if (closed[0]) {
                                throw new SQLException("Connection is closed");
                            }
                            return null;
                        }
                        case "close" -> {
                            closed[0] = true;
                            return null;
                        }
                        default -> {
                            return null;
                        }
                    }
                });
    }

    @Test
    void the_works_own_error_is_reported_when_the_connection_it_broke_cannot_be_set_back() {
        List<String> calls = new ArrayList<>();
        Connection c = closedByFailure(calls);
        SQLException refused = new SQLException("could not run distributed query with FOR UPDATE/SHARE commands",
                "0A000");
        assertThatThrownBy(() -> Tx.inTransaction(c, conn -> {
            conn.close(); // what the pool does to it on this error
            throw refused;
        })).isSameAs(refused).satisfies(e -> assertThat(e.getSuppressed()).singleElement()
                .satisfies(s -> assertThat(s).hasMessage("Connection is closed")));
    }

    @Test
    void a_failure_to_set_back_a_connection_after_work_that_succeeded_is_reported() {
        List<String> calls = new ArrayList<>();
        Connection c = closedByFailure(calls);
        assertThatThrownBy(() -> Tx.inTransaction(c, conn -> {
            conn.close();
            return 1;
        })).isInstanceOf(SQLException.class).hasMessage("Connection is closed");
    }
}
