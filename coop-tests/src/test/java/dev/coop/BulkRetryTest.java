package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.Payloads.Empty;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Retrying every parked run of a saga at once: in bounded batches, each run logged, each hierarchy audited. */
class BulkRetryTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    @Test
    void retrying_every_parked_run_of_a_saga_logs_each_run_and_audits_each_hierarchy(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("bulk-flaky", Empty.class);
        AtomicBoolean broken = new AtomicBoolean(true);
        Saga<Empty> saga = Saga.on(topic, "bulk-flaky-saga")
                .step("call", step -> {
                    if (broken.get()) {
                        throw new IOException("down");
                    }
                })
                .retry(RetryPolicy.attempts(1).parkWhenExhausted())
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            CoopClient client = engine.client();
            List<MessageId> ids = List.of(client.launch(topic, new Empty()), client.launch(topic, new Empty()),
                    client.launch(topic, new Empty()));
            Await.until("three parked runs", WAIT, () -> client.countParked("bulk-flaky-saga") == 3);
            assertThatThrownBy(() -> client.retryParked("bulk-flaky-saga", "olga", " "))
                    .isInstanceOf(CoopValidationException.class).hasMessageContaining("reason");

            broken.set(false);
            assertThat(client.retryParked("bulk-flaky-saga", "olga", "the bank is back")).isEqualTo(3);

            for (MessageId id : ids) {
                assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
                assertThat(client.audit(id)).singleElement().satisfies(a -> {
                    assertThat(a.action()).isEqualTo("retry-parked");
                    assertThat(a.actor()).isEqualTo("olga");
                    assertThat(a.reason()).isEqualTo("the bank is back");
                    assertThat(a.outcome()).isEqualTo("RETRYING 1 parked run(s) of saga bulk-flaky-saga");
                });
                assertThat(client.events(id)).extracting(e -> e.type()).containsSubsequence(EventType.PARKED,
                        EventType.RETRIED, EventType.SUSPENDED, EventType.COMMITTED);
            }
            assertThat(client.countParked("bulk-flaky-saga")).isZero();
            assertThat(client.retryParked("bulk-flaky-saga", "olga", "again")).isZero();
        }
    }

    @Test
    void a_bulk_retry_of_many_parked_runs_goes_in_batches_of_bounded_size(DataSource dataSource) throws Exception {
        int runs = Integer.getInteger("coop.test.bulk", 2_500);
        try (Connection c = dataSource.getConnection()) {
            Coop.client(dataSource); // the schema
            try (PreparedStatement ps = c.prepareStatement(
                    """
                            WITH m AS (
                              INSERT INTO coop.message (id, topic, payload, root_id)
                              SELECT g, 'bulk-many', '{}'::jsonb, g FROM (SELECT gen_random_uuid() AS g FROM generate_series(1, ?)) s
                              RETURNING id
                            )
                            INSERT INTO coop.run (id, message_id, saga, lineage, status, next_step, root_id)
                            SELECT x.run, x.id, 'bulk-many-saga', ARRAY[x.id, x.run], 'PARKED', 'call', x.id
                              FROM (SELECT id, gen_random_uuid() AS run FROM m) x
                            """)) {
                ps.setInt(1, runs);
                ps.executeUpdate();
            }
        }
        CoopClient client = Coop.client(dataSource);
        assertThat(client.countParked("bulk-many-saga")).isEqualTo(runs);

        long started = System.nanoTime();
        long retried = client.retryParked("bulk-many-saga", "olga", "the bank is back");
        long millis = (System.nanoTime() - started) / 1_000_000;
        System.out.printf("Retried %d parked runs in %d ms (batches of 1,000 runs, one transaction each)%n", retried,
                millis);

        assertThat(retried).isEqualTo(runs);
        assertThat(client.countParked("bulk-many-saga")).isZero();
        try (Connection c = dataSource.getConnection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("""
                        SELECT (SELECT count(*) FROM coop.audit WHERE action = 'retry-parked'
                                   AND outcome LIKE '%saga bulk-many-saga'),
                               (SELECT count(*) FROM coop.event WHERE type = 'RETRIED' AND saga = 'bulk-many-saga'),
                               (SELECT count(DISTINCT xmin::text) FROM coop.run WHERE saga = 'bulk-many-saga')
                        """)) {
            rs.next();
            assertThat(rs.getLong(1)).as("one audit entry per hierarchy").isEqualTo(runs);
            assertThat(rs.getLong(2)).as("one RETRIED event per run").isEqualTo(runs);
            assertThat(rs.getLong(3)).as("transactions that retried them: 1,000 runs each at most")
                    .isEqualTo((runs + 999) / 1_000);
        }
    }
}
