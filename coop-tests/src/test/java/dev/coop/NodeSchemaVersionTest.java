package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The Node participant checks the schema version before it claims anything (protocol.md, "The schema and its
 * version"): it refuses to start on another version, and stops claiming when a migration changes the version under
 * it, instead of retrying the statements that now fail as database trouble for ever. Each test moves the schema to
 * the version after this build's (a row of schema_version, as a newer Coop's migration would write) and puts it back afterwards.
 */
class NodeSchemaVersionTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static CoopClient client;
    /** The schema version this build migrates to, which the participant speaks. */
    static int known;
    Process node;

    /**
     * A participant named {@code name} with one saga of that name on topic {@code <name>-topic}; prints ready, then,
     * if it stops for its schema, why, and exits 3.
     */
    static String script(String name, int pollMillis) {
        return """
                const { Participant } = require('./coop');
                const participant = new Participant({ engineId: '%1$s', pollMillis: %2$d })
                  .saga('%1$s', '%1$s-topic', [{ name: 'only', run: async () => {} }]);
                participant.halted.then((e) => { console.log('halted: ' + e.message); process.exit(3); });
                participant.start().then(() => console.log('ready'),
                  (e) => { console.log(e.message); process.exit(1); });
                """.formatted(name, pollMillis);
    }

    @BeforeAll
    static void migrate() throws SQLException {
        client = Coop.client(db.dataSource()); // migrates to the version this build knows
        known = (int) count("SELECT max(version) FROM coop.schema_version");
    }

    @BeforeEach
    void participantInstalled() {
        NodeProcess.assumeInstalled();
    }

    @AfterEach
    void putTheSchemaBack() throws Exception {
        NodeProcess.stop(node);
        sql("DELETE FROM coop.schema_version WHERE version = " + (known + 1));
        sql("ALTER TABLE IF EXISTS coop.cancellation_v23 RENAME TO cancellation");
    }

    @Test
    void a_schema_at_another_version_is_refused_before_anything_is_registered() throws Exception {
        newerSchema();

        NodeProcess.Ran ran = NodeProcess.run(db, "-e", script("node-schema-refused", 1000));

        assertThat(ran.exitCode()).as(ran.output()).isEqualTo(1);
        assertThat(ran.output()).isEqualTo("The Coop schema 'coop' is at version " + (known + 1)
                + "; this participant speaks the protocol of version " + known + " (protocol.md: schema_version)");
        assertThat(count("SELECT count(*) FROM coop.saga_registration WHERE saga = 'node-schema-refused'")).isZero();
        assertThat(count("SELECT count(*) FROM coop.engine WHERE id = 'node-schema-refused'")).isZero();
    }

    @Test
    void a_migration_under_a_running_participant_stops_it_at_its_next_poll() throws Exception {
        List<String> output = NodeProcess.output();
        node = NodeProcess.start(db, output, "-e", script("node-schema-polls", 100));

        newerSchema();

        assertHalted(output);
        MessageId id = client.launch(Topic.of("node-schema-polls-topic", String.class), "after the migration");
        assertNeverClaimed(id);
    }

    @Test
    void a_statement_that_meets_a_missing_table_checks_the_version_and_stops_instead_of_retrying() throws Exception {
        List<String> output = NodeProcess.output();
        // no poll within the test: only the claim that fails checks the version
        node = NodeProcess.start(db, output, "-e", script("node-schema-claims", 3_600_000));
        MessageId id;
        try (Connection c = db.dataSource().getConnection()) {
            c.setAutoCommit(false);
            newerSchema(c);
            sql(c, "ALTER TABLE coop.cancellation RENAME TO cancellation_v23"); // what the claim reads is gone
            // notifies the participant when it commits
            id = client.launch(c, Topic.of("node-schema-claims-topic", String.class), "the claim fails");
            c.commit();
        }

        assertHalted(output);
        assertNeverClaimed(id);
    }

    private void assertHalted(List<String> output) throws InterruptedException {
        assertThat(node.waitFor(NodeProcess.WAIT.toSeconds(), TimeUnit.SECONDS)).as("stopped: %s", output).isTrue();
        assertThat(node.exitValue()).as("%s", output).isEqualTo(3);
        Await.until("its last words", NodeProcess.WAIT, () -> output.stream().anyMatch(l -> l.startsWith("halted")));
        assertThat(output).contains("halted: The Coop schema 'coop' is at version " + (known + 1)
                + "; this participant speaks the protocol of version " + known + " (protocol.md: schema_version)");
    }

    /** The run is as its launch left it: never claimed, never postponed or parked as database trouble. */
    private static void assertNeverClaimed(MessageId id) throws SQLException {
        assertThat(count("SELECT count(*) FROM coop.run WHERE message_id = ? AND status = 'RUNNABLE' AND retries = 0",
                id)).isEqualTo(1);
        assertThat(count("SELECT count(*) FROM coop.event WHERE message_id = ? AND type <> 'EMITTED'", id)).isZero();
    }

    private static void newerSchema() throws SQLException {
        try (Connection c = db.dataSource().getConnection()) {
            newerSchema(c);
        }
    }

    private static void newerSchema(Connection c) throws SQLException {
        sql(c, "INSERT INTO coop.schema_version (version, name) VALUES (" + (known + 1) + ", 'a_later_protocol')");
    }

    private static void sql(String statement) throws SQLException {
        try (Connection c = db.dataSource().getConnection()) {
            sql(c, statement);
        }
    }

    private static void sql(Connection c, String statement) throws SQLException {
        try (Statement st = c.createStatement()) {
            st.execute(statement);
        }
    }

    private static long count(String query, MessageId... message) throws SQLException {
        try (Connection c = db.dataSource().getConnection(); var st = c.prepareStatement(query)) {
            for (int i = 0; i < message.length; i++) {
                st.setObject(i + 1, message[i].value());
            }
            try (ResultSet rs = st.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }
}
