package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.internal.store.ClaimedRun;
import dev.coop.internal.store.Migrations;
import dev.coop.internal.store.SagaLimits;
import dev.coop.internal.store.SchemaName;
import dev.coop.internal.store.Store;
import dev.coop.internal.store.Time;
import dev.coop.test.CoopDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Schema version 14 makes saga limits that do not bind cheap: a step start moves a rate token of its saga by a HOT
 * update (no index on {@code taken_at}), found by a primary-key scan from a random token on; an older schema keeps
 * its rate windows and registrations, and its limits hold on after the migration, for the engine's claim and for the
 * {@code start_limited} function that other participants call.
 */
class RateWindowTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    @Test
    void a_start_moves_its_rate_token_by_a_hot_update(DataSource dataSource) throws Exception {
        Topic<Empty> topic = Topic.of("window-hot", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "window-hot-saga").concurrency(4).rateLimit(1000, Duration.ofHours(1))
                .step("go", step -> {
                }).build();
        try (CoopEngine engine = Coop.engine(db.newDataSource(4)).workers(1).register(saga).start()) {
            assertThat(engine.id()).isNotNull(); // registered with its limits; its run waits for the claims below
        }
        Coop.client(dataSource).launch(topic, new Empty());
        Store store = new Store(new SchemaName("coop"), Time.DATABASE);
        try (Connection c = dataSource.getConnection()) {
            store.limited(new SagaLimits(store.schema()).limited(c, List.of(saga.name())));
            c.setAutoCommit(false);
            try {
                for (int i = 0; i < 20; i++) { // the same run again (the transaction's own lock), a token each time
                    assertThat(store.claim(c, saga.name(), saga.version(), "hot")).isNotNull();
                }
                try (Statement st = c.createStatement();
                        ResultSet rs = st.executeQuery("SELECT pg_stat_get_xact_tuples_updated(x),"
                                + " pg_stat_get_xact_tuples_hot_updated(x) FROM (SELECT 'coop.rate_token'::regclass"
                                + " AS x) t")) {
                    rs.next();
                    assertThat(rs.getInt(1)).as("rate tokens moved").isEqualTo(20);
                    assertThat(rs.getInt(2)).as("of them by HOT updates").isEqualTo(20);
                }
            } finally {
                c.rollback();
                c.setAutoCommit(true);
            }
        }
    }

    @Test
    void leased_rate_tokens_keep_a_binding_rate_limit_exact_across_three_engines(DataSource dataSource)
            throws Exception {
        Topic<Empty> topic = Topic.of("window-lease", Empty.class);
        Duration period = Duration.ofMillis(500);
        int rate = 128; // large enough for leases of 2 tokens; binds at 256 starts per second
        Saga<Empty> saga = Saga.on(topic, "window-lease-saga").rateLimit(rate, period)
                .step("one", step -> {
                })
                .step("two", step -> {
                })
                .build();
        List<CoopEngine> engines = new java.util.ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                engines.add(Coop.engine(db.newDataSource(6)).name("lease-" + i).workers(4)
                        .pollInterval(Duration.ofMillis(200)).register(saga).start());
            }
            // every statement that moves tokens of the saga records how many it moved: leases move several at once
            try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
                st.execute(
                        """
                                CREATE TABLE public.token_moves (moved int NOT NULL);
                                CREATE FUNCTION public.record_token_moves() RETURNS trigger LANGUAGE plpgsql AS $$
                                BEGIN
                                  INSERT INTO public.token_moves
                                    SELECT count(*) FROM moved WHERE saga = 'window-lease-saga' HAVING count(*) > 0;
                                  RETURN NULL;
                                END $$;
                                CREATE TRIGGER record_token_moves AFTER UPDATE ON coop.rate_token
                                  REFERENCING NEW TABLE AS moved FOR EACH STATEMENT EXECUTE FUNCTION public.record_token_moves();
                                """);
            }
            CoopClient client = Coop.client(dataSource);
            List<MessageId> ids = new java.util.ArrayList<>();
            for (int i = 0; i < 300; i++) {
                ids.add(client.launch(topic, new Empty()));
            }
            for (MessageId id : ids) {
                assertThat(client.awaitCompletion(id, Duration.ofSeconds(90)))
                        .isEqualTo(dev.coop.inspect.Outcome.COMMITTED);
            }
        } finally {
            engines.forEach(CoopEngine::close);
        }
        List<dev.coop.inspect.Event> events = dev.coop.test.CoopTables.of(dataSource).allEvents();
        List<java.time.OffsetDateTime> starts = events.stream()
                .filter(e -> saga.name().equals(e.saga()) && e.startedAt() != null)
                .map(e -> java.util.Map.entry(e.lineage().last(), e.startedAt())).distinct() // a step: a run, a start
                .map(java.util.Map.Entry::getValue).sorted().toList();
        assertThat(starts).hasSize(600);
        for (int i = 0; i + rate < starts.size(); i++) { // the (n+1)th start after any start is a period later
            assertThat(Duration.between(starts.get(i), starts.get(i + rate))).as("starts %d and %d", i, i + rate)
                    .isGreaterThanOrEqualTo(period);
        }
        assertThat(query(dataSource, "SELECT (max(moved) > 1)::text FROM public.token_moves"))
                .as("tokens moved together, by leases").isEqualTo("true");
        dev.coop.test.Invariants.assertAll(events);
    }

    @Test
    void a_schema_of_version_13_keeps_its_rate_windows_and_its_limits_hold_after_the_migration() throws Exception {
        SchemaName schema = new SchemaName("window_v13");
        DataSource ds = db.dataSource();
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE SCHEMA window_v13");
            st.execute("CREATE TABLE window_v13.schema_version (version int PRIMARY KEY, name text NOT NULL, "
                    + "applied_at timestamptz NOT NULL DEFAULT clock_timestamp())");
            String[] v13 = {"V1__foundation.sql", "V2__joins.sql", "V3__schedules.sql", "V4__claims.sql",
                    "V5__finally_launches.sql", "V6__retention.sql", "V7__step_instances.sql",
                    "V8__operator_audit.sql", "V9__quiet_wakeups.sql", "V10__launch_options.sql",
                    "V11__saga_limits.sql", "V12__saga_versions.sql", "V13__schema_diet.sql"};
            for (int i = 0; i < v13.length; i++) {
                st.execute(StepInstancesMigrationTest.version(v13[i], schema));
                st.execute("INSERT INTO window_v13.schema_version (version, name) VALUES (" + (i + 1) + ", '"
                        + v13[i] + "')");
            }
            // a saga of 2 slots and 3 starts per hour, two of them taken a minute ago; two runs due
            st.execute(
                    """
                            INSERT INTO window_v13.saga_registration (saga, topic, last_engine, concurrency, rate_limit, rate_period_ms)
                            VALUES ('w', 't', 'old', 2, 3, 3600000);
                            INSERT INTO window_v13.rate_token (saga, slot, taken_at)
                            VALUES ('w', 0, now() - interval '1 minute'), ('w', 1, '-infinity'),
                                   ('w', 2, now() - interval '1 minute');
                            INSERT INTO window_v13.message (id, topic, payload)
                            VALUES ('00000000-0000-0000-0000-000000000001', 't', '{}'),
                                   ('00000000-0000-0000-0000-000000000002', 't', '{}');
                            INSERT INTO window_v13.run (id, message_id, saga, lineage, status)
                            VALUES ('00000000-0000-0000-0000-00000000000a', '00000000-0000-0000-0000-000000000001', 'w',
                                    '{00000000-0000-0000-0000-000000000001,00000000-0000-0000-0000-00000000000a}',
                                    'RUNNABLE'),
                                   ('00000000-0000-0000-0000-00000000000b', '00000000-0000-0000-0000-000000000002', 'w',
                                    '{00000000-0000-0000-0000-000000000002,00000000-0000-0000-0000-00000000000b}',
                                    'RUNNABLE');
                            """);
        }

        Migrations.apply(ds, schema);

        assertThat(query(ds, "SELECT count(*) || ' ' || count(*) FILTER (WHERE taken_at > '-infinity')"
                + " FROM window_v13.rate_token WHERE saga = 'w'")).as("tokens, taken").isEqualTo("3 2");
        assertThat(query(ds, "SELECT count(*)::text FROM pg_indexes WHERE schemaname = 'window_v13'"
                + " AND tablename = 'rate_token'")).as("indexes of rate_token: its primary key").isEqualTo("1");
        assertThat(query(ds, "SELECT array_to_string(reloptions, ',') FROM pg_class"
                + " WHERE oid = 'window_v13.rate_token'::regclass")).isEqualTo("fillfactor=50");

        long minute = Duration.ofMinutes(1).toMillis();
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            c.setAutoCommit(false);
            try (ResultSet rs = st.executeQuery("SELECT window_v13.start_limited('w', NULL) IS NOT NULL,"
                    + " window_v13.start_limited('w', NULL) IS NULL, current_setting('coop.limit_wait', true)")) {
                rs.next(); // other participants' function: the free token, then no more until a period is over
                assertThat(rs.getBoolean(1)).isTrue();
                assertThat(rs.getBoolean(2)).isTrue();
                assertThat(Long.parseLong(rs.getString(3))).isBetween(58 * minute, 59 * minute);
            } finally {
                c.rollback(); // gives the token back
            }
        }
        Store store = new Store(schema, Time.DATABASE);
        SagaLimits limits = new SagaLimits(schema);
        try (Connection first = ds.getConnection(); Connection second = ds.getConnection()) {
            store.limited(limits.limited(first, List.of("w")));
            first.setAutoCommit(false);
            second.setAutoCommit(false);
            ClaimedRun run = store.claim(first, "w", 1, "first");
            assertThat(run).as("the engine's claim: the one free token").isNotNull();
            first.commit();
            assertThat(store.claim(second, "w", 1, "second")).as("a slot, but no token").isNull();
            assertThat(Long.parseLong(limits.commitEmptyClaim(second))).as("until the older tokens free")
                    .isBetween(58 * minute, 59 * minute);
        }
    }

    private static String query(DataSource ds, String sql) throws SQLException { // test constants only
        try (Connection c = ds.getConnection();
                PreparedStatement ps = c.prepareStatement(sql);
                ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getString(1);
        }
    }
}
