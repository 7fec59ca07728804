package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.Payloads.Empty;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.Outcome;
import dev.coop.inspect.RunQuery;
import dev.coop.inspect.RunView;
import dev.coop.test.CoopDatabase;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Values PostgreSQL cannot take in a query (times out of its range, offsets beyond its own, NUL characters) and
 * lineages that mix two hierarchies are refused at the API, naming the parameter, never reaching the database.
 */
class HostileQueryTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Topic<Empty> TOPIC = Topic.of("hostile-query", Empty.class);
    static CoopEngine engine;
    static CoopClient client;

    @BeforeAll
    static void start() {
        engine = Coop.engine(db.dataSource()).register(Saga.on(TOPIC, "hostile-query-saga").step("one", step -> {
        }).build()).start();
        client = engine.client();
    }

    @AfterAll
    static void stop() {
        engine.close();
    }

    @Test
    void times_out_of_postgresqls_range_are_refused_naming_the_parameter() {
        OffsetDateTime far = OffsetDateTime.parse("+999999999-12-31T23:59:59Z");
        assertThatThrownBy(() -> RunQuery.newest().since(far)).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("RunQuery.since");
        assertThatThrownBy(() -> RunQuery.newest().before(OffsetDateTime.parse("-0005-01-01T00:00:00Z")))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("RunQuery.before");
    }

    @Test
    void an_offset_postgresql_does_not_know_is_taken_as_the_instant_it_names() {
        OffsetDateTime eastmost = OffsetDateTime.parse("2020-01-01T00:00:00+18:00");
        RunQuery q = RunQuery.newest().since(eastmost);
        assertThat(q.since().getOffset()).isEqualTo(ZoneOffset.UTC);
        assertThat(q.since().toInstant()).isEqualTo(eastmost.toInstant());
        assertThat(client.runs(q.before(OffsetDateTime.parse("2020-01-01T00:00:00-18:00")))).isEmpty();
        assertThat(client.countRuns(q)).isNotNull();
    }

    @Test
    void nul_and_control_characters_in_filters_are_refused_naming_the_parameter() {
        assertThatThrownBy(() -> RunQuery.newest().topic("\0")).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("RunQuery.topic").hasMessageContaining("U+0000");
        assertThatThrownBy(() -> RunQuery.newest().saga("a\u001b[2J")).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("RunQuery.saga");
        assertThatThrownBy(() -> RunQuery.newest().failureType("Bad\0Type")).isInstanceOf(
                CoopValidationException.class).hasMessageContaining("RunQuery.failureType");
        assertThatThrownBy(() -> RunQuery.newest().businessKey("order\0/1")).isInstanceOf(
                CoopValidationException.class).hasMessageContaining("RunQuery.businessKey")
                .hasMessageContaining("U+0000");
        assertThatThrownBy(() -> RunQuery.newest().tag("vip\0")).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("RunQuery.tag").hasMessageContaining("U+0000");
        assertThatThrownBy(() -> RunQuery.newest().tag("x".repeat(101))).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("RunQuery.tag").hasMessageContaining("100");
        assertThatThrownBy(() -> RunQuery.newest().businessKey(" ")).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("RunQuery.businessKey");
        assertThatThrownBy(() -> client.search("a\0b")).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("control characters");
        assertThat(client.countRuns(RunQuery.newest().failureType("%_' OR true --"))).as("a value, never SQL")
                .isEmpty();
        assertThatThrownBy(() -> client.joins().byKey("\0", 10)).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("Joins.byKey key");
        assertThatThrownBy(() -> client.joins().byKey("x\uD800", 10)).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("Joins.byKey key");
        assertThat(client.joins().byKey("no-such-key", 10)).isEmpty();
    }

    @Test
    void the_whole_event_log_is_read_at_once_only_up_to_its_bound_and_in_pages_beyond() throws Exception {
        MessageId id = client.launch(TOPIC, new Empty());
        assertThat(client.awaitCompletion(id, Duration.ofSeconds(30))).isEqualTo(Outcome.COMMITTED);
        int small = client.events(id).size();
        try (java.sql.Connection c = db.dataSource().getConnection();
                java.sql.PreparedStatement ps = c.prepareStatement("""
                        INSERT INTO coop.event (message_id, type, saga, engine, step, lineage, created_at, started_at,
                                                root_id)
                        SELECT message_id, type, saga, engine, step, lineage, created_at, started_at, root_id
                          FROM coop.event, generate_series(1, ?) WHERE message_id = ? AND type = 'SEEN'
                        """)) { // a log as long as a hierarchy of thousands of runs writes
            ps.setInt(1, CoopClient.MAX_EVENTS_AT_ONCE);
            ps.setObject(2, id.value());
            ps.executeUpdate();
        }
        assertThatThrownBy(() -> client.events(id)).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("more than 10000 events").hasMessageContaining("events(message, afterId, limit)");
        long after = 0;
        int read = 0;
        for (List<dev.coop.inspect.Event> page; !(page = client.events(id, after, 4_000)).isEmpty();) {
            read += page.size();
            after = page.getLast().id();
        }
        assertThat(read).isEqualTo(small + CoopClient.MAX_EVENTS_AT_ONCE);
    }

    @Test
    void a_lineage_whose_run_belongs_to_another_hierarchy_is_refused_by_every_action_and_read() {
        MessageId a = client.launch(TOPIC, new Empty());
        MessageId b = client.launch(TOPIC, new Empty());
        assertThat(client.awaitCompletion(a, Duration.ofSeconds(30))).isEqualTo(Outcome.COMMITTED);
        assertThat(client.awaitCompletion(b, Duration.ofSeconds(30))).isEqualTo(Outcome.COMMITTED);
        RunView runOfB = client.tree(b).runs().getFirst();
        List<java.util.UUID> ids = new ArrayList<>(runOfB.lineage().ids());
        ids.set(0, a.value());
        Lineage forged = new Lineage(ids);

        assertThatThrownBy(() -> client.rollback(forged, "undo")).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("does not name a run").hasMessageContaining(b.toString());
        assertThatThrownBy(() -> client.cancel(forged, "stop")).isInstanceOf(CoopValidationException.class);
        assertThatThrownBy(() -> client.retryNow(forged)).isInstanceOf(CoopValidationException.class);
        assertThatThrownBy(() -> client.markStepDone(forged)).isInstanceOf(CoopValidationException.class);
        assertThatThrownBy(() -> client.tree(forged)).isInstanceOf(CoopValidationException.class);
        assertThat(client.statuses(b)).containsExactly(RunStatus.COMMITTED);
        assertThat(client.tree(runOfB.lineage()).runId()).isEqualTo(runOfB.runId());
        assertThat(client.tree(new Lineage(List.of(runOfB.runId()))).lineage()).as("by its id alone")
                .isEqualTo(runOfB.lineage());
        assertThat(client.retryNow(runOfB.lineage())).as("its own lineage: not parked").isFalse();
    }
}
