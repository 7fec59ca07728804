package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.Payloads.Empty;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.Outcome;
import dev.coop.test.CoopDatabase;
import dev.coop.test.StepGate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A saga's own worker count: at most that many workers of an engine execute its runs at once, so a slow saga cannot
 * take every worker from the others (the reference's {@code subscribe(topic, saga, instances)}).
 */
class SagaWorkersTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);

    @Test
    void a_slow_saga_limited_to_one_worker_leaves_the_other_workers_to_other_sagas(DataSource dataSource) {
        Topic<Empty> slowTopic = Topic.of("workers-slow", Empty.class);
        Topic<Empty> quickTopic = Topic.of("workers-quick", Empty.class);
        StepGate gate = new StepGate(Duration.ofSeconds(30));
        AtomicInteger inSlowStep = new AtomicInteger();
        AtomicInteger mostAtOnce = new AtomicInteger();
        Saga<Empty> slow = Saga.on(slowTopic, "workers-slow-saga")
                .workers(1)
                .step("hold", step -> {
                    mostAtOnce.accumulateAndGet(inSlowStep.incrementAndGet(), Math::max);
                    try {
                        gate.pass();
                    } finally {
                        inSlowStep.decrementAndGet();
                    }
                })
                .build();
        Saga<Empty> quick = Saga.on(quickTopic, "workers-quick-saga").step("go", step -> {
        }).build();
        assertThat(slow.workers()).isEqualTo(1);
        assertThat(quick.workers()).isZero();

        try (CoopEngine engine = Coop.engine(dataSource).workers(4).register(slow, quick).start()) {
            CoopClient client = engine.client();
            List<MessageId> slowOnes = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                slowOnes.add(client.launch(slowTopic, new Empty()));
            }
            gate.awaitArrivals(1, WAIT);
            // three workers are free: the quick saga gets them, the two other slow runs wait for the first
            for (int i = 0; i < 5; i++) {
                MessageId q = client.launch(quickTopic, new Empty());
                assertThat(client.awaitCompletion(q, WAIT)).isEqualTo(Outcome.COMMITTED);
            }
            assertThat(gate.arrivals()).as("slow steps started while the first is held").isEqualTo(1);
            gate.open();
            for (MessageId id : slowOnes) {
                assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            }
            assertThat(mostAtOnce.get()).isEqualTo(1);
        } finally {
            gate.open();
        }
    }

    @Test
    void a_saga_worker_count_below_one_or_above_1024_is_refused_with_the_value(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("workers-invalid", Empty.class);
        for (int workers : new int[]{0, -1, 1025}) {
            assertThatThrownBy(() -> Saga.on(topic, "workers-invalid-saga").workers(workers))
                    .as("workers %d", workers)
                    .isInstanceOf(CoopValidationException.class)
                    .hasMessageContaining("workers of saga 'workers-invalid-saga' must be between 1 and 1024, was "
                            + workers);
        }
    }
}
