package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.Payloads.Empty;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.Outcome;
import dev.coop.inspect.RunCount;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import java.io.IOException;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Counts over time: launched, committed, rolled back and parked per saga and minute, read from run and run_count. */
class RunCountsTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    record Order(boolean fail) {
    }

    static final Topic<Order> ORDERS = Topic.of("counted-orders", Order.class);
    static final Topic<Empty> LINES = Topic.of("counted-lines", Empty.class);

    static final Saga<Order> ORDER_SAGA = Saga.on(ORDERS, "counted-order")
            .step("lines", step -> {
                for (int i = 0; i < 3; i++) {
                    step.launch(LINES, new Empty());
                }
            })
            .step("check", step -> {
                if (step.payload().fail()) {
                    throw new IllegalStateException("refused");
                }
            })
            .build();
    static final Topic<Empty> PAYMENTS = Topic.of("counted-payments", Empty.class);
    static final Saga<Empty> PAYMENT_SAGA = Saga.on(PAYMENTS, "counted-payment")
            .step("pay", step -> {
                throw new IOException("the bank is down");
            })
            .retry(RetryPolicy.attempts(1).parkWhenExhausted())
            .build();
    static final Saga<Empty> LINE_SAGA = Saga.on(LINES, "counted-line").step("add", step -> {
    }).build();

    @Test
    void launches_and_final_outcomes_are_counted_per_saga_and_minute(DataSource dataSource) {
        try (CoopEngine engine = Coop.engine(dataSource).register(ORDER_SAGA).register(LINE_SAGA)
                .register(PAYMENT_SAGA).start()) {
            CoopClient client = engine.client();
            List<MessageId> ok = List.of(client.launch(ORDERS, new Order(false)),
                    client.launch(ORDERS, new Order(false)));
            MessageId failed = client.launch(ORDERS, new Order(true));
            client.launch(PAYMENTS, new Empty());
            for (MessageId id : ok) {
                assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            }
            assertThat(client.awaitCompletion(failed, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            Await.until("a parked payment", WAIT, () -> client.countParked("counted-payment") == 1);

            RunCount orders = total(client.counts(Duration.ofHours(2)), "counted-order");
            assertThat(orders.launched()).isEqualTo(3);
            assertThat(orders.committed()).isEqualTo(2);
            assertThat(orders.rolledBack()).isEqualTo(1);
            assertThat(orders.parked()).isZero();
            RunCount payments = total(client.counts(Duration.ofHours(2)), "counted-payment");
            assertThat(payments.launched()).isEqualTo(1);
            assertThat(payments.parked()).isEqualTo(1);
            assertThat(payments.committed() + payments.rolledBack()).isZero();
            RunCount lines = total(client.counts(Duration.ofHours(2)), "counted-line");
            assertThat(lines.launched()).as("a fan-out counts each child run").isEqualTo(9);
            assertThat(lines.committed()).isEqualTo(9);
            assertThat(lines.rolledBack()).as("the failed order's lines were compensated").isEqualTo(3);
        }
    }

    @Test
    void counts_are_read_from_the_rollup_and_retention_prunes_old_minutes(DataSource dataSource) throws Exception {
        CoopClient client = Coop.client(dataSource);
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
            s.executeUpdate("""
                    INSERT INTO coop.run_count (minute, saga, shard, launched, committed)
                    VALUES (date_trunc('minute', now()) - interval '90 minutes', 'old-saga', 1, 5, 4),
                           (date_trunc('minute', now()) - interval '90 minutes', 'old-saga', 2, 1, 1),
                           (date_trunc('minute', now()) - interval '3 days', 'old-saga', 1, 7, 7)
                    """);
        }
        List<RunCount> lastTwoHours = client.counts(Duration.ofHours(2)).stream()
                .filter(n -> n.saga().equals("old-saga")).toList();
        assertThat(lastTwoHours).as("shards of a minute add up").singleElement()
                .satisfies(n -> assertThat(n.launched()).isEqualTo(6))
                .satisfies(n -> assertThat(n.committed()).isEqualTo(5));
        assertThat(client.counts(Duration.ofDays(4))).filteredOn(n -> n.saga().equals("old-saga")).hasSize(2);

        client.prune(Duration.ofDays(1));
        assertThat(client.counts(Duration.ofDays(4))).filteredOn(n -> n.saga().equals("old-saga")).hasSize(1);
        assertThatThrownBy(() -> client.counts(Duration.ofDays(8))).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("window");
        assertThatThrownBy(() -> client.counts(Duration.ofSeconds(5))).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("window");
    }

    @Test
    void only_the_launch_and_the_final_outcome_write_a_count(DataSource dataSource) throws Exception {
        Coop.client(dataSource); // the schema
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
            s.execute("""
                    CREATE TABLE public.count_writes (saga text);
                    CREATE FUNCTION public.log_count_write() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN INSERT INTO public.count_writes VALUES (NEW.saga); RETURN NULL; END $$;
                    CREATE TRIGGER log_count_write AFTER INSERT OR UPDATE ON coop.run_count
                      FOR EACH ROW EXECUTE FUNCTION public.log_count_write();
                    """);
        }
        Topic<Empty> topic = Topic.of("counted-long", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "counted-long").step("a", step -> {
        }).step("b", step -> {
        }).step("c", step -> {
        }).step("d", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
        }
        try (Connection c = dataSource.getConnection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT count(*) FROM public.count_writes WHERE saga = 'counted-long'")) {
            rs.next();
            assertThat(rs.getInt(1)).as("four steps: no count written at the launch, per step or at the commit"
                    + " (they are read from the run row, schema version 27)").isZero();
        }
        RunCount counted = total(Coop.client(dataSource).counts(Duration.ofHours(2)), "counted-long");
        assertThat(counted.launched()).isEqualTo(1);
        assertThat(counted.committed()).isEqualTo(1);
    }

    private static RunCount total(List<RunCount> counts, String saga) {
        return counts.stream().filter(n -> n.saga().equals(saga))
                .reduce(new RunCount(saga, null, 0, 0, 0, 0, 0), (a, b) -> new RunCount(saga, null,
                        a.launched() + b.launched(), a.committed() + b.committed(), a.rolledBack() + b.rolledBack(),
                        a.rollbackFailed() + b.rollbackFailed(), a.parked() + b.parked()));
    }
}
