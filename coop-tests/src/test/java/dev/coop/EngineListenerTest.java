package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.inspect.Outcome;
import dev.coop.test.CoopDatabase;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Listeners observe steps without changing them, and can carry an entry with every launch. (The MDC keys set while a
 * step runs are asserted in coop-spring-boot-example, whose Logback keeps an MDC; slf4j-simple here does not.)
 */
class EngineListenerTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    record Job(int n) {
    }

    static final Topic<Job> JOBS = Topic.of("listener.jobs", Job.class);

    @Test
    void aThrowingListenerChangesNothing(DataSource dataSource) {
        List<String> seen = new CopyOnWriteArrayList<>();
        List<String> events = new CopyOnWriteArrayList<>();
        Saga<Job> saga = Saga.on(JOBS, "listened").step("one", step -> seen.add(step.step()))
                .step("two", step -> {
                }).build();
        EngineListener hostile = new EngineListener() {
            @Override
            public Object stepStarted(StepContext<?> step, Part part) {
                throw new IllegalStateException("listener bug");
            }

            @Override
            public void claimed(String saga, Duration waited) {
                throw new IllegalStateException("listener bug");
            }

            @Override
            public CooperationContext launching(String topic, CooperationContext context) {
                throw new IllegalStateException("listener bug");
            }
        };
        EngineListener recording = new EngineListener() {
            @Override
            public void stepEnded(StepContext<?> step, Part part, Object state, Outcome outcome, long nanos,
                    Throwable failure) {
                events.add(step.step() + ":" + outcome);
            }
        };
        try (CoopEngine engine = Coop.engine(dataSource).workers(1).register(saga).listener(hostile)
                .listener(recording).start()) {
            MessageId message = engine.client().launch(JOBS, new Job(1));
            assertThat(engine.client().awaitCompletion(message, Duration.ofSeconds(30)))
                    .isEqualTo(dev.coop.inspect.Outcome.COMMITTED);
            assertThat(seen).containsExactly("one");
            assertThat(events).containsExactly("one:COMMITTED", "two:COMMITTED");
        }
    }

    @Test
    void aListenerCarriesAnEntryWithEveryLaunch(DataSource dataSource) {
        List<String> traces = new CopyOnWriteArrayList<>();
        Saga<Job> saga = Saga.on(Topic.of("listener.carried", Job.class), "carried")
                .step("read", step -> traces.add(step.context().rawJson(EngineListener.TRACE_PARENT).orElse("")))
                .build();
        EngineListener carrier = new EngineListener() {
            @Override
            public CooperationContext launching(String topic, CooperationContext context) {
                return context.withRawJson(EngineListener.TRACE_PARENT,
                        "\"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\"");
            }
        };
        try (CoopEngine engine = Coop.engine(dataSource).workers(1).register(saga).listener(carrier).start()) {
            MessageId message = engine.client().launch(Topic.of("listener.carried", Job.class), new Job(1));
            engine.client().awaitCompletion(message, Duration.ofSeconds(30));
        }
        assertThat(traces).containsExactly("\"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\"");
    }

    /** A listener that also wraps step code in a framework's transaction: it may fail a step after its code returned. */
    static final class RefusingHook implements EngineListener, dev.coop.internal.StepTransactionHook {
        final List<String> calls = new CopyOnWriteArrayList<>();

        @Override
        public Object begin(StepContext<?> step) {
            calls.add("begin " + step.step());
            return step.step();
        }

        @Override
        public void end(Object state, Throwable failure) {
            calls.add("end " + state + (failure == null ? "" : " after " + failure.getMessage()));
            if (failure == null && state.equals("refused")) {
                throw new IllegalStateException("the framework refuses to commit");
            }
        }
    }

    @Test
    void aTransactionHookBracketsStepCodeAndAFailureAtItsEndRollsTheStepBack(DataSource dataSource) throws Exception {
        try (var c = dataSource.getConnection(); var s = c.createStatement()) {
            s.execute("CREATE TABLE hooked (step text)");
        }
        Saga<Job> saga = Saga.on(Topic.of("listener.hooked", Job.class), "hooked")
                .step("accepted", step -> insert(step, "accepted"))
                .step("refused", step -> insert(step, "refused"))
                .compensateWith((step, cause) -> insert(step, "compensated")).build();
        RefusingHook hook = new RefusingHook();
        try (CoopEngine engine = Coop.engine(dataSource).workers(1).register(saga).listener(hook).start()) {
            MessageId message = engine.client().launch(Topic.of("listener.hooked", Job.class), new Job(1));
            assertThat(engine.client().awaitCompletion(message, Duration.ofSeconds(30)))
                    .isEqualTo(Outcome.ROLLED_BACK);
        }
        assertThat(hook.calls).containsExactly("begin accepted", "end accepted", "begin refused", "end refused");
        try (var c = dataSource.getConnection();
                var s = c.createStatement();
                var rs = s.executeQuery("SELECT string_agg(step, ',' ORDER BY step) FROM hooked")) {
            rs.next();
            assertThat(rs.getString(1)).isEqualTo("accepted"); // "refused" undone; no compensation: it never ran
        }
    }

    private static void insert(StepContext<Job> step, String what) throws java.sql.SQLException {
        try (var insert = step.connection().prepareStatement("INSERT INTO hooked (step) VALUES (?)")) {
            insert.setString(1, what);
            insert.executeUpdate();
        }
    }
}
