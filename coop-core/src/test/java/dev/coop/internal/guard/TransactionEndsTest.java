package dev.coop.internal.guard;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class TransactionEndsTest {
    @ParameterizedTest
    @ValueSource(strings = {"COMMIT", "commit", "CoMmIt;", "  \n\tCOMMIT  ", "END", "end transaction", "ABORT",
            "ROLLBACK", "rollback work", "ROLLBACK TRANSACTION", "ROLLBACK AND CHAIN", "COMMIT AND CHAIN",
            "COMMIT WORK", "PREPARE TRANSACTION 'x'", "prepare\ntransaction 'x'", "COMMIT PREPARED 'x'",
            "ROLLBACK PREPARED 'x'", "-- a comment\nCOMMIT", "/* a */ COMMIT", "/* nested /* twice */ still */ END",
            "/**/COMMIT", "INSERT INTO t VALUES (1); COMMIT",
            "INSERT INTO t VALUES (1);COMMIT; INSERT INTO t VALUES (2)",
            "SELECT 1;;; end", "SELECT 'a;b'; COMMIT", "SELECT \"x;y\" FROM t; COMMIT", "SELECT $$;$$; COMMIT",
            "SELECT $tag$ $$ ; $tag$; ROLLBACK", "SELECT E'it\\'s'; COMMIT", "SELECT 'it''s'; COMMIT",
            "SELECT 1 -- ; not here\n; COMMIT", "ROLLBACK /* TO */", "ROLLBACK; ROLLBACK TO SAVEPOINT a",
            "SELECT ); COMMIT", "SELECT $1; COMMIT"})
    void statements_that_end_or_split_the_transaction_are_found(String sql) {
        assertThat(TransactionEnds.find(sql)).as(sql).isNotNull();
    }

    @ParameterizedTest
    @ValueSource(strings = {"SELECT 1", "INSERT INTO t (committed) VALUES ('COMMIT')", "SELECT 'x; COMMIT'",
            "SELECT \"; COMMIT\" FROM t", "SELECT $$; COMMIT$$", "SELECT $a$; COMMIT $a$", "-- COMMIT", "/* ; END */",
            "/* /* ; END */ ; COMMIT */ SELECT 1", "SELECT 1 -- ; COMMIT", "ROLLBACK TO SAVEPOINT a",
            "rollback to a", "ROLLBACK WORK TO SAVEPOINT a", "ROLLBACK TRANSACTION TO a", "SAVEPOINT a",
            "RELEASE SAVEPOINT a", "PREPARE q AS SELECT 1", "SELECT CASE WHEN true THEN 1 END", "BEGIN",
            "SELECT E'\\'; COMMIT'", "UPDATE t SET end_at = now()", "SELECT commit_ts FROM t", "",
            "SELECT 'unterminated; COMMIT", "CALL commit_all()", "{call commit()}", "SELECT x FROM t WHERE a = $1",
            "CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; SELECT CASE WHEN true THEN 2 END; END",
            "DO $$ BEGIN PERFORM 1; END $$"})
    void other_statements_pass(String sql) {
        assertThat(TransactionEnds.find(sql)).as(sql).isNull();
    }

    @Test
    void a_standard_function_body_does_not_hide_a_commit_after_it() {
        assertThat(TransactionEnds.find(
                "CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; END; COMMIT")).isEqualTo("COMMIT");
        assertThat(TransactionEnds.find("CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; COMMIT"))
                .isEqualTo("COMMIT");
        assertThat(TransactionEnds.find("CREATE FUNCTION begin() RETURNS int LANGUAGE sql AS 'select 1'; END"))
                .isEqualTo("END");
    }

    @Test
    void a_backslash_quote_cannot_hide_a_commit_from_either_reading_of_strings() {
        // standard_conforming_strings off: the server reads one string up to the second quote, then COMMIT
        assertThat(TransactionEnds.find("SELECT '\\' , ' ; COMMIT; SELECT '")).isEqualTo("COMMIT");
        // on: the first string ends at the backslash's quote, then COMMIT
        assertThat(TransactionEnds.find("SELECT 'a\\'; COMMIT; --'")).isEqualTo("COMMIT");
    }

    @Test
    void the_refused_words_are_named() {
        assertThat(TransactionEnds.find("select 1; commit  and chain")).isEqualTo("COMMIT AND CHAIN");
        assertThat(TransactionEnds.find("prepare transaction 'x'")).isEqualTo("PREPARE TRANSACTION");
        assertThat(TransactionEnds.find("end")).isEqualTo("END");
    }
}
