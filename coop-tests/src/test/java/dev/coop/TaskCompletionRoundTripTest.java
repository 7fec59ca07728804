package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Order;
import dev.coop.inspect.Outcome;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** What completing an external task costs its caller: one statement, committed as it returns. */
class TaskCompletionRoundTripTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);

    @Test
    void completing_a_task_is_one_statement_in_auto_commit_for_the_caller(DataSource dataSource) {
        Topic<Order> topic = Topic.of("trip-orders", Order.class);
        Saga<Order> saga = Saga.on(topic, "trip-saga")
                .step("ask", step -> step.openTask("approval", step.payload(),
                        TaskOptions.none().key("trip/" + step.payload().id())))
                .step("after", step -> {
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Order("1", 1));
            awaitOpen(engine.client(), "trip/1");
            List<String> trips = new CopyOnWriteArrayList<>();
            CoopClient caller = Coop.client(counting(dataSource, trips));
            trips.clear(); // building the client read the schema

            assertThat(caller.complete("trip/1", "yes")).isEqualTo(TaskOutcome.SETTLED);

            assertThat(trips).hasSize(1).allMatch(t -> t.startsWith("auto-commit: WITH target AS"));
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
        }
    }

    @Test
    void a_task_of_a_last_step_is_completed_in_a_transaction_that_finishes_the_runs_above_it(DataSource dataSource) {
        Topic<Order> topic = Topic.of("trip-parents", Order.class);
        Topic<Order> child = Topic.of("trip-children", Order.class);
        Saga<Order> parent = Saga.on(topic, "trip-parent")
                .step("launch", step -> step.launch(child, step.payload()))
                .build();
        Saga<Order> last = Saga.on(child, "trip-last-step")
                .step("ask", step -> step.openTask("approval", step.payload(),
                        TaskOptions.none().key("trip-last/" + step.payload().id())))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(parent, last).start()) {
            MessageId id = engine.client().launch(topic, new Order("2", 1));
            awaitOpen(engine.client(), "trip-last/2");
            List<String> trips = new CopyOnWriteArrayList<>();
            CoopClient caller = Coop.client(counting(dataSource, trips));
            trips.clear();

            assertThat(caller.complete("trip-last/2", "yes")).isEqualTo(TaskOutcome.SETTLED);

            assertThat(trips.getFirst()).startsWith("auto-commit: WITH target AS"); // found the parent in its last step
            assertThat(trips).contains("COMMIT");
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(engine.client().statuses(id)).containsOnly(RunStatus.COMMITTED);
        }
    }

    private static void awaitOpen(CoopClient client, String key) {
        Await.until("task " + key + " open", WAIT,
                () -> client.externalTask(key).filter(t -> t.state() == TaskState.OPEN).isPresent());
    }

    /**
     * {@code target}, noting every round trip its connections make: each statement executed (with whether it ran in
     * auto-commit and its first words) and each commit or rollback of an open transaction.
     */
    private static DataSource counting(DataSource target, List<String> trips) {
        return (DataSource) Proxy.newProxyInstance(TaskCompletionRoundTripTest.class.getClassLoader(),
                new Class<?>[]{DataSource.class}, (proxy, m, args) -> {
                    Object r = invoke(target, m, args);
                    return r instanceof Connection c ? connection(c, trips) : r;
                });
    }

    private static Connection connection(Connection target, List<String> trips) {
        return (Connection) Proxy.newProxyInstance(TaskCompletionRoundTripTest.class.getClassLoader(),
                new Class<?>[]{Connection.class}, (proxy, m, args) -> {
                    Object r = invoke(target, m, args);
                    if (m.getName().equals("prepareStatement") && r instanceof PreparedStatement ps) {
                        String sql = ((String) args[0]).strip();
                        return Proxy.newProxyInstance(TaskCompletionRoundTripTest.class.getClassLoader(),
                                new Class<?>[]{PreparedStatement.class}, (p, sm, sargs) -> {
                                    if (sm.getName().startsWith("execute")) {
                                        trips.add((target.getAutoCommit() ? "auto-commit: " : "in transaction: ")
                                                + sql.substring(0, Math.min(40, sql.length())));
                                    }
                                    return invoke(ps, sm, sargs);
                                });
                    }
                    if (m.getName().equals("createStatement") && r instanceof Statement) {
                        trips.add("a plain statement");
                    }
                    if ((m.getName().equals("commit") || m.getName().equals("rollback")) && args == null) {
                        trips.add(m.getName().toUpperCase(java.util.Locale.ROOT));
                    }
                    return r;
                });
    }

    private static Object invoke(Object target, Method m, Object[] args) throws Throwable {
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
