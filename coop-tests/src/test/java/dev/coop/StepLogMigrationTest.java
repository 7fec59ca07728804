package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.failure.Failure;
import dev.coop.inspect.Outcome;
import dev.coop.test.CoopDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Schema version 23 moves the step instances of {@code run_step} into the step log (the SUSPENDED events that carry a
 * {@code step_seq}) for runs already in flight: a schema at version 22, written as that version's engine wrote it, is
 * migrated, and its runs then go on, roll back and are rolled back by an operator from the instances it kept.
 */
class StepLogMigrationTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final String SCHEMA = "mig_v22";
    private static final String SAGA = "log-mig-saga";
    private static final String[] V22 = {"V1__foundation.sql", "V2__joins.sql", "V3__schedules.sql", "V4__claims.sql",
            "V5__finally_launches.sql", "V6__retention.sql", "V7__step_instances.sql", "V8__operator_audit.sql",
            "V9__quiet_wakeups.sql", "V10__launch_options.sql", "V11__saga_limits.sql", "V12__saga_versions.sql",
            "V13__schema_diet.sql", "V14__rate_window.sql", "V15__continuation_reserve.sql", "V16__seen_once.sql",
            "V17__row_launch_notify.sql", "V18__light_trigger_checks.sql", "V19__join_check.sql",
            "V20__external_tasks.sql", "V21__attempt_history.sql", "V22__run_counts.sql"};

    private final List<String> compensated = new CopyOnWriteArrayList<>();

    private Saga<String> saga() {
        return Saga.on(Topic.of("log-mig", String.class), SAGA)
                .flowStep("loop", step -> step.iteration() < 4 ? Flow.repeat() : Flow.next())
                .compensateWith((step, cause) -> compensated.add(step.payload() + " " + step.iteration()))
                .step("end", step -> {
                    if (step.payload().equals("fails")) {
                        throw new IllegalStateException("the end fails");
                    }
                })
                .build();
    }

    @Test
    void runs_in_flight_at_version_22_go_on_and_roll_back_from_the_step_log(DataSource dataSource) throws Exception {
        String cause = new Failure("the end fails", IllegalStateException.class.getName(), "test", List.of(),
                List.of()).toJson();
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE SCHEMA " + SCHEMA);
            st.execute("CREATE TABLE " + SCHEMA + ".schema_version (version int PRIMARY KEY, name text NOT NULL, "
                    + "applied_at timestamptz NOT NULL DEFAULT clock_timestamp())");
            for (int i = 0; i < V22.length; i++) {
                st.execute(StepInstancesMigrationTest.version(V22[i], new dev.coop.internal.store.SchemaName(SCHEMA)));
                st.execute("INSERT INTO " + SCHEMA + ".schema_version (version, name) VALUES (" + (i + 1) + ", '"
                        + V22[i] + "')");
            }
        }
        // as version 22's engine left them: a run half-way through its loop (it will fail at its end), a committed
        // run (an operator rolls it back after the migration), and a run rolling back (instance 3 compensated)
        UUID going = inFlight(dataSource, "fails", "RUNNABLE", "HAPPY", 2, "{2}", null, null, null);
        UUID committed = inFlight(dataSource, "committed", "COMMITTED", "HAPPY", 5, "{4,1}", null, null, null);
        UUID rolling = inFlight(dataSource, "rolling", "RUNNABLE", "ROLLBACK", 4, "{4}", 2, "CHILDREN", cause);
        assertThat(suspendedBy(dataSource, going)).isEqualTo(2);
        assertThat(suspendedBy(dataSource, rolling)).isEqualTo(6);

        dev.coop.internal.store.Migrations.apply(dataSource, new dev.coop.internal.store.SchemaName(SCHEMA));
        assertThat(stepLog(dataSource, committed)).as("the committed run's instances, in the step log")
                .containsExactly("0:0#1", "1:0#2", "2:0#3", "3:0#4", "4:1#1");
        assertThat(suspendedBy(dataSource, rolling)).as("no event added: the SUSPENDED events carry them")
                .isEqualTo(6);
        assertThat(suspendedBy(dataSource, committed)).isEqualTo(5);
        assertThat(stepLog(dataSource, rolling)).containsExactly("0:0#1", "1:0#2", "2:0#3", "3:0#4");
        assertThat(stepLog(dataSource, going)).containsExactly("0:0#1", "1:0#2");

        try (CoopEngine engine = Coop.engine(dataSource).schema(SCHEMA).name("log-mig").workers(1).register(saga())
                .start()) {
            CoopClient client = engine.client();

            assertThat(client.awaitCompletion(messageOf(dataSource, going), WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(client.awaitCompletion(messageOf(dataSource, rolling), WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            client.rollback(messageOf(dataSource, committed), "undone after the migration");
            assertThat(client.awaitCompletion(messageOf(dataSource, committed), WAIT))
                    .isEqualTo(Outcome.ROLLED_BACK);
            assertThat(compensated.stream().filter(s -> s.startsWith("fails")))
                    .containsExactly("fails 4", "fails 3", "fails 2", "fails 1");
            assertThat(compensated.stream().filter(s -> s.startsWith("rolling")))
                    .containsExactly("rolling 3", "rolling 2", "rolling 1");
            assertThat(compensated.stream().filter(s -> s.startsWith("committed")))
                    .containsExactly("committed 4", "committed 3", "committed 2", "committed 1");
            assertThat(stepLog(dataSource, going)).containsExactly("0:0#1", "1:0#2", "2:0#3", "3:0#4");
        }
        try (Connection c = dataSource.getConnection();
                Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT to_regclass('" + SCHEMA + ".run_step') IS NULL, "
                        + "(SELECT max(version) FROM " + SCHEMA + ".schema_version)")) {
            rs.next();
            assertThat(rs.getBoolean(1)).as("run_step dropped").isTrue();
            assertThat(rs.getInt(2)).isEqualTo(25);
        }
    }

    /**
     * A run of {@link #saga()} as version 22 wrote it: its message, EMITTED, SEEN, one SUSPENDED and one run_step row
     * per executed instance (the loop's, then the end's), COMMITTED when committed; on the rollback path the
     * ROLLING_BACK and the two SUSPENDED of the instance it compensated.
     */
    private static UUID inFlight(DataSource ds, String payload, String status, String phase, int stepsDone,
            String iterations, Integer rollbackSeq, String stage, String cause) throws Exception {
        UUID message = UUID.randomUUID();
        UUID run = UUID.randomUUID();
        int loops = Math.min(stepsDone, 4);
        boolean ended = stepsDone > 4;
        try (Connection c = ds.getConnection()) {
            exec(c, "INSERT INTO {s}.message (id, topic, payload) VALUES (?, 'log-mig', to_jsonb(?::text))", message,
                    payload);
            exec(c, """
                    INSERT INTO {s}.run (id, message_id, saga, lineage, status, phase, step_index, next_step, final_step,
                                         steps_done, iterations, rollback_seq, rollback_stage, rollback_cause, failure,
                                         started_at, finished_at)
                    VALUES (?, ?, ?, ARRAY[?::uuid, ?::uuid], ?, ?, ?, ?, ?, ?, ?::int[], ?, ?, ?::jsonb, ?::jsonb,
                            clock_timestamp(), CASE WHEN ? = 'COMMITTED' THEN clock_timestamp() END)
                    """,
                    run, message, SAGA, message, run, status, phase, ended ? 2 : loops == 4 ? 1 : 0,
                    ended ? null : loops == 4 ? "end" : "loop",
                    ended ? "end" : null, stepsDone, iterations, rollbackSeq, stage, cause, cause, status);
            log(c, message, run, "EMITTED", null, null);
            log(c, message, run, "SEEN", null, null);
            for (int i = 0; i < loops; i++) {
                log(c, message, run, "SUSPENDED", "loop", null);
                exec(c, "INSERT INTO {s}.run_step (run_id, seq, instance, iteration) VALUES (?, ?, 0, ?)", run, i,
                        i + 1);
            }
            if (ended) {
                log(c, message, run, "SUSPENDED", "end", null);
                exec(c, "INSERT INTO {s}.run_step (run_id, seq, instance, iteration) VALUES (?, 4, 1, 1)", run);
                log(c, message, run, "COMMITTED", "end", null);
            }
            if ("ROLLBACK".equals(phase)) {
                log(c, message, run, "ROLLING_BACK", null, cause);
                log(c, message, run, "SUSPENDED", "Rollback of loop (rolling back child scopes)", null);
                log(c, message, run, "SUSPENDED", "Rollback of loop", null);
            }
        }
        return run;
    }

    private static void log(Connection c, UUID message, UUID run, String type, String step, String exception)
            throws Exception {
        exec(c, """
                INSERT INTO {s}.event (message_id, type, saga, engine, step, lineage, exception, started_at)
                VALUES (?, ?, ?, 'v22-engine', ?, ARRAY[?::uuid, ?::uuid], ?::jsonb,
                        CASE WHEN ? NOT IN ('EMITTED', 'SEEN') THEN clock_timestamp() END)
                """, message, type, "EMITTED".equals(type) ? null : SAGA, step, message, run, exception, type);
    }

    private static void exec(Connection c, String sql, Object... values) throws Exception {
        try (PreparedStatement ps = c.prepareStatement(sql.replace("{s}", SCHEMA))) {
            for (int i = 0; i < values.length; i++) {
                ps.setObject(i + 1, values[i]);
            }
            ps.executeUpdate();
        }
    }

    private static MessageId messageOf(DataSource ds, UUID run) throws Exception {
        try (Connection c = ds.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT message_id FROM " + SCHEMA + ".run WHERE id = ?")) {
            ps.setObject(1, run);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return new MessageId(rs.getObject(1, UUID.class));
            }
        }
    }

    private static int suspendedBy(DataSource ds, UUID run) throws Exception {
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement("""
                SELECT count(*) FROM {s}.event e JOIN {s}.run r ON r.message_id = e.message_id AND r.saga = e.saga
                 WHERE r.id = ? AND e.type = 'SUSPENDED'
                """.replace("{s}", SCHEMA))) {
            ps.setObject(1, run);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    /** The run's step log: {@code step_seq:instance#iteration}, by step_seq, each carried by a SUSPENDED. */
    private static List<String> stepLog(DataSource ds, UUID run) throws Exception {
        List<String> rows = new ArrayList<>();
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement("""
                SELECT e.step_seq, e.instance, e.iteration, e.type FROM {s}.event e
                  JOIN {s}.run r ON r.message_id = e.message_id AND r.saga = e.saga
                 WHERE r.id = ? AND e.step_seq IS NOT NULL ORDER BY e.step_seq
                """.replace("{s}", SCHEMA))) {
            ps.setObject(1, run);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    assertThat(rs.getString(4)).isEqualTo("SUSPENDED");
                    rows.add(rs.getInt(1) + ":" + rs.getInt(2) + "#" + rs.getInt(3));
                }
            }
        }
        return rows;
    }
}
