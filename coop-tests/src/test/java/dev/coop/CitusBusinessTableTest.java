package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.inspect.Outcome;
import dev.coop.test.Await;
import dev.coop.test.CitusDatabase;
import dev.coop.test.Invariants;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What a step's transaction sends to the workers on Citus, read from the coordinator's log with
 * {@code citus.log_remote_commands} on for the test's database: an ordinary step (no business writes) sends every
 * command, from its {@code BEGIN} to its {@code COMMIT}, to the hierarchy's worker alone (the claim's candidates are
 * read across shards before, in a transaction of their own) and commits there with one {@code COMMIT} and no
 * {@code PREPARE TRANSACTION}; a step that also writes a user's table that is not distributed (a plain table on the
 * coordinator) works through the coordinator and still commits without two-phase commit: the coordinator's own
 * transaction is not a remote participant.
 */
class CitusBusinessTableTest {
    @RegisterExtension
    static final CitusDatabase db = new CitusDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);
    /** A command the coordinator sent a worker, after the log line prefix {@code <backend pid>|}, and its server. */
    private static final Pattern ISSUING = Pattern.compile("(?m)^(\\d+)\\|NOTICE:  issuing (.*)\\n\\d+\\|DETAIL:  on"
            + " server postgres@127\\.0\\.0\\.1:(\\d+)");
    /** A remote transaction's first command names the coordinator's distributed transaction number. */
    private static final Pattern BEGIN = Pattern.compile("^BEGIN .*assign_distributed_transaction_id\\(\\d+, (\\d+),");

    @BeforeAll
    static void migrateAndLog() throws SQLException {
        Coop.client(db.dataSource());
        try (Connection c = db.dataSource().getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE ledger (id bigserial PRIMARY KEY, note text NOT NULL)");
            // for sessions opened from now on, in this database only: the coordinator logs what it sends workers
            st.execute("ALTER DATABASE \"" + db.databaseName() + "\" SET citus.log_remote_commands = on");
            st.execute("ALTER DATABASE \"" + db.databaseName() + "\" SET log_min_messages = notice");
            // each line names its backend, so that a step's commands are told from the other engines' sessions'
            st.execute("ALTER SYSTEM SET log_line_prefix = '%p|'");
            st.execute("SELECT pg_reload_conf()");
        }
        Await.until("the coordinator's log names each line's backend", WAIT,
                () -> "%p|".equals(show("log_line_prefix")));
    }

    @AfterAll
    static void restoreLogPrefix() throws SQLException {
        try (Connection c = db.dataSource().getConnection(); Statement st = c.createStatement()) {
            st.execute("ALTER SYSTEM RESET log_line_prefix");
            st.execute("SELECT pg_reload_conf()");
        }
    }

    private static String show(String setting) {
        try (Connection c = db.cluster().connect(db.cluster().ports().get(0), db.databaseName());
                Statement st = c.createStatement();
                java.sql.ResultSet rs = st.executeQuery("SHOW " + setting)) {
            rs.next();
            return rs.getString(1);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void an_ordinary_step_commits_on_one_worker_without_two_phase_commit() throws Exception {
        Topic<Empty> topic = Topic.of("w1-plain", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "w1-plain").step("only", step -> {
            remember(step.connection());
        }).build();
        MessageId id = runOnce(topic, saga);
        assertOneWorkerWritten(id);
    }

    /**
     * The step's transaction sent every command, from its BEGIN to its COMMIT, to the hierarchy's worker alone (the claim's
     * candidates read every shard in a transaction of their own, before it); a PREPARE TRANSACTION, if any, went to
     * that worker too.
     */
    private static void assertOneWorkerWritten(MessageId id) {
        String worker = ":" + CitusFaults.workerOf(db.dataSource(), id.value());
        assertThat(sent).as("what the step's transaction sent the workers").isNotEmpty()
                .filteredOn(c -> c.matches("(INSERT|UPDATE|DELETE|COPY|PREPARE TRANSACTION|COMMIT PREPARED).*"))
                .isNotEmpty();
        assertThat(sent).as("what the step's transaction sent the workers").startsWith("BEGIN TRANSACTION" + worker)
                .allMatch(c -> c.endsWith(worker));
        assertThat(sent).filteredOn(c -> c.startsWith("PREPARE TRANSACTION")).hasSizeLessThanOrEqualTo(1);
    }
    @Test
    void a_step_writing_a_plain_coordinator_table_works_without_two_phase_commit() throws Exception {
        assertThat(CitusFaults.count(db.dataSource(),
                "SELECT count(*)::int FROM pg_dist_partition WHERE logicalrelid = 'ledger'::regclass"))
                .as("ledger is not a Citus table").isZero();
        Topic<Empty> topic = Topic.of("w1-ledger", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "w1-ledger").step("write", step -> {
            remember(step.connection());
            try (PreparedStatement ps = step.connection().prepareStatement("INSERT INTO ledger (note) VALUES (?)")) {
                ps.setString(1, step.runId().toString());
                ps.executeUpdate();
            }
        }).build();
        MessageId id = runOnce(topic, saga);
        assertThat(CitusFaults.count(db.dataSource(), "SELECT count(*)::int FROM ledger")).isEqualTo(1);
        assertOneWorkerWritten(id);
        for (int port : db.cluster().ports()) {
            try (Connection c = db.cluster().connect(port, db.databaseName())) {
                assertThat(CitusFaults.count(c, "SELECT count(*)::int FROM pg_prepared_xacts")).isZero();
            }
        }
    }

    private static volatile int pid;
    /** What the last {@link #runOnce} step's transaction sent the workers, as {@code COMMAND:port}. */
    private static final List<String> sent = new java.util.concurrent.CopyOnWriteArrayList<>();
    private static volatile long transaction;

    /** The step's coordinator backend and its distributed transaction (the claim made it one already). */
    private static void remember(Connection c) throws SQLException {
        try (Statement st = c.createStatement();
                java.sql.ResultSet rs = st.executeQuery(
                        "SELECT pg_backend_pid(), transaction_number FROM get_current_transaction_id()")) {
            rs.next();
            pid = rs.getInt(1);
            transaction = rs.getLong(2);
        }
    }

    /**
     * Runs one message of {@code saga} to its end on a new engine of one worker; returns the commands that the
     * coordinator's backend of the step's connection sent to workers, as {@code COMMAND:port}, and prints the
     * commands of the other backends (registration, heartbeats, probes).
     */
    private static MessageId runOnce(Topic<Empty> topic, Saga<Empty> saga) throws IOException {
        Path log = db.cluster().logFile(db.cluster().ports().get(0));
        long from = log.toFile().length();
        MessageId id;
        try (CoopEngine engine = CitusHappyPathTest.engine(db.newDataSource(4)).workers(1).register(saga).start()) {
            id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            Invariants.assertAll(engine.client().events(id));
        }
        String text;
        try (RandomAccessFile file = new RandomAccessFile(log.toFile(), "r")) {
            byte[] bytes = new byte[(int) (file.length() - from)];
            file.seek(from);
            file.readFully(bytes);
            text = new String(bytes, StandardCharsets.UTF_8);
        }
        sent.clear();
        List<String> others = new java.util.ArrayList<>();
        long current = -1;
        boolean ended = false; // the current transaction sent its first COMMIT (or ROLLBACK) to a worker
        Matcher m = ISSUING.matcher(text);
        while (m.find()) {
            String command = m.group(2).strip();
            String shown = (command.startsWith("COPY")
                    ? command.replaceAll("^(COPY \"?[a-z_]+).*", "$1")
                    : command.replaceAll("^(\\w+( TRANSACTION| PREPARED)?).*", "$1")) + ":" + m.group(3);
            if (Integer.parseInt(m.group(1)) != pid) {
                others.add(shown);
                continue;
            }
            Matcher begin = BEGIN.matcher(command);
            if (begin.find()) {
                current = Long.parseLong(begin.group(1));
                ended = false;
            }
            boolean end = shown.matches("(COMMIT|COMMIT PREPARED|ROLLBACK|PREPARE TRANSACTION):\\d+");
            if (ended && !end) {
                current = -1; // what the backend sends after the transaction's end (a read in auto-commit)
            }
            ended |= end && !shown.startsWith("PREPARE");
            if (current == transaction) {
                sent.add(shown);
            }
        }
        System.out.println(topic.name() + ": the step's transaction (" + transaction + ") sent " + sent
                + "; the other sessions of the test " + others);
        return id;
    }
}
