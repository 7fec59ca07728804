package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.inspect.Outcome;
import dev.coop.test.CoopDatabase;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.SQLTransientConnectionException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A worker whose task fails before it claims (no connection from the pool, a claim the database refused) loses
 * nothing: the claim the task was owed is owed again once the worker has paused. Before, a launch by the engine's
 * own client (which owes one claim and sends no notification the engine acts on) waited for the next poll, an hour
 * here.
 */
class FailedClaimTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration NEVER = Duration.ofHours(1);
    static final Duration WAIT = Duration.ofSeconds(20);

    @Test
    void a_launch_whose_owed_claim_got_no_connection_is_claimed_after_the_pause() {
        Topic<Empty> topic = Topic.of("failed-claim", Empty.class);
        Saga<Empty> saga = Saga.on(topic, "failed-claim").step("one", step -> {
        }).build();
        AtomicInteger failures = new AtomicInteger();
        DataSource failing = failingWorkerConnections(db.dataSource(), failures);
        try (CoopEngine engine = Coop.engine(failing).pollInterval(NEVER).notifications(false).register(saga)
                .start()) {
            CoopClient client = engine.client();
            assertThat(client.awaitCompletion(client.launch(topic, new Empty()), WAIT)) // the start's probe is done
                    .isEqualTo(Outcome.COMMITTED);
            failures.set(1); // the next connection a worker asks for
            MessageId id = client.launch(topic, new Empty());
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(failures).as("the failure happened").hasValue(0);
        }
    }

    /** {@code target}, but the next {@code failures} connections asked for by engine workers are refused. */
    static DataSource failingWorkerConnections(DataSource target, AtomicInteger failures) {
        return (DataSource) Proxy.newProxyInstance(FailedClaimTest.class.getClassLoader(),
                new Class<?>[]{DataSource.class}, (proxy, method, args) -> {
                    if (method.getName().equals("getConnection") && Thread.currentThread().getName()
                            .contains("-worker-") && failures.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                        throw new SQLTransientConnectionException("test: no connection for this worker");
                    }
                    try {
                        return method.invoke(target, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }
}
