package dev.coop;

import dev.coop.failure.CancellationRequestedException;
import dev.coop.failure.ChildRollbackFailedException;
import dev.coop.failure.ChildRolledBackException;
import dev.coop.failure.CooperationException;
import dev.coop.failure.Failure;
import dev.coop.failure.GaveUpException;
import dev.coop.failure.ParentSaidSoException;
import dev.coop.failure.RollbackRequestedException;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.coop.Payloads.Empty;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import dev.coop.test.EventLog;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The failure document: Java failures round-trip through JSON; a foreign failure (another language, unknown type,
 * properties Coop does not know) round-trips without loss; and a failure crossing sagas prints as a distributed stack
 * trace with the source of every level.
 */
class FailureJsonTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);
    static final ObjectMapper JSON = new ObjectMapper();

    /** Written by a Python service: unknown type, and properties Coop does not model at the top and in a cause. */
    static final String FOREIGN = """
            {
              "traceId": "4bf92f3577b34da6a3ce929d0e0e4736",
              "message": "card declined",
              "type": "payments.errors.PaymentDeclined",
              "source": "payments-py[worker-7]",
              "stackTrace": [
                {"fileName": "charge.py", "lineNumber": 12, "functionName": "charge"},
                {"fileName": "<stdin>", "functionName": "<module>"}
              ],
              "causes": [
                {
                  "message": "HTTP 402 from the acquirer",
                  "type": "requests.HTTPError",
                  "source": "payments-py[worker-7]",
                  "stackTrace": [],
                  "causes": [],
                  "httpStatus": 402,
                  "headers": {"retry-after": null, "x-ids": [1, 2.5, "three", true]}
                }
              ],
              "retryable": false,
              "details": {"amount": {"value": "12.30", "currency": "EUR"}}
            }
            """;

    /** Like {@link #FOREIGN}, with a property Coop does not know inside a stack frame (a JavaScript column). */
    static final String FOREIGN_FRAME = """
            {
              "message": "undefined is not a function",
              "type": "TypeError",
              "source": "shipping-js[pod-3]",
              "stackTrace": [{"fileName": "ship.js", "lineNumber": 40, "functionName": "ship", "columnNumber": 17}],
              "causes": []
            }
            """;

    @Test
    void a_java_failure_round_trips_through_its_json_form() {
        IllegalStateException e = new IllegalStateException("outer", new java.io.IOException("inner"));
        e.addSuppressed(new UnsupportedOperationException());
        Failure f = Failure.of(e, "orders[engine-1]");

        Failure back = Failure.fromJson(f.toJson());
        assertThat(back).isEqualTo(f);
        assertThat(back.toJson()).isEqualTo(f.toJson());
        assertThat(f.type()).isEqualTo("java.lang.IllegalStateException");
        assertThat(f.message()).isEqualTo("outer");
        assertThat(f.source()).isEqualTo("orders[engine-1]");
        assertThat(f.stackTrace().getFirst().className()).isEqualTo(FailureJsonTest.class.getName());
        assertThat(f.stackTrace().getFirst().fileName()).isEqualTo("FailureJsonTest.java");
        assertThat(f.causes()).extracting(Failure::type).containsExactly("java.io.IOException",
                "java.lang.UnsupportedOperationException");
        assertThat(f.causes().get(1).message()).isEqualTo("<no message>");
        assertThat(f.causes()).allMatch(c -> "orders[engine-1]".equals(c.source()));
        JsonNode tree = tree(f.toJson());
        assertThat(iterable(tree.fieldNames())).containsExactly("message", "type", "source", "stackTrace",
                "causes");
    }

    @Test
    void a_foreign_failure_with_unknown_properties_and_type_round_trips_without_loss() {
        Failure f = Failure.fromJson(FOREIGN);
        assertThat(tree(f.toJson())).isEqualTo(tree(FOREIGN));
        assertThat(Failure.fromJson(f.toJson())).isEqualTo(f);
        assertThat(f.extensions()).containsKeys("traceId", "retryable", "details");
        assertThat(f.causes().getFirst().extensions()).containsKeys("httpStatus", "headers");
        assertThat(f.stackTrace().get(1).lineNumber()).isNull();
        assertThat(f.stackTrace().get(1).className()).isNull();
    }

    @Test
    void a_foreign_failure_with_unknown_properties_in_a_stack_frame_round_trips_without_loss() {
        Failure f = Failure.fromJson(FOREIGN_FRAME);
        assertThat(tree(f.toJson())).isEqualTo(tree(FOREIGN_FRAME));
    }

    @Test
    void a_foreign_failure_becomes_a_plain_cooperation_exception_that_prints_every_source() {
        CooperationException e = CooperationException.of(Failure.fromJson(FOREIGN));
        assertThat(e.getClass()).isEqualTo(CooperationException.class);
        assertThat(e.getMessage()).isEqualTo("[payments-py[worker-7]] payments.errors.PaymentDeclined: card declined");
        assertThat(e.reason()).isEqualTo("card declined");
        assertThat(e.getStackTrace()[0].getFileName()).isEqualTo("charge.py");
        assertThat(e.getStackTrace()[0].getLineNumber()).isEqualTo(12);
        assertThat(e.getStackTrace()[0].getMethodName()).isEqualTo("charge");
        assertThat(e.getCause()).isInstanceOf(CooperationException.class)
                .hasMessage("[payments-py[worker-7]] requests.HTTPError: HTTP 402 from the acquirer");
        assertThat(tree(e.failure().toJson())).isEqualTo(tree(FOREIGN));

        String printed = printed(e);
        assertThat(printed).contains("[payments-py[worker-7]] payments.errors.PaymentDeclined: card declined",
                "Caused by: ", "[payments-py[worker-7]] requests.HTTPError: HTTP 402", "charge.py:12");
        String rendered = e.failure().render();
        assertThat(rendered).contains("payments.errors.PaymentDeclined: card declined  [in payments-py[worker-7]]",
                "caused by: requests.HTTPError: HTTP 402 from the acquirer  [in payments-py[worker-7]]");
    }

    @Test
    void coop_failure_types_become_their_own_exception_classes() {
        assertThat(CooperationException.of(failure(ChildRolledBackException.TYPE)))
                .isInstanceOf(ChildRolledBackException.class);
        assertThat(CooperationException.of(failure(ChildRollbackFailedException.TYPE)))
                .isInstanceOf(ChildRollbackFailedException.class);
        assertThat(CooperationException.of(failure(ParentSaidSoException.TYPE)))
                .isInstanceOf(ParentSaidSoException.class);
        assertThat(CooperationException.of(failure(GaveUpException.TYPE))).isInstanceOf(GaveUpException.class);
        assertThat(CooperationException.of(failure(CancellationRequestedException.TYPE)))
                .isInstanceOf(CancellationRequestedException.class);
        assertThat(CooperationException.of(failure(RollbackRequestedException.TYPE)))
                .isInstanceOf(RollbackRequestedException.class);
        // an exception thrown again keeps its failure as it was
        CooperationException e = CooperationException.of(Failure.fromJson(FOREIGN));
        assertThat(Failure.of(e, "elsewhere[x]")).isEqualTo(e.failure());
    }

    @Test
    void a_failure_three_sagas_deep_prints_as_a_distributed_stack_trace_with_each_source(DataSource dataSource) {
        Topic<Empty> rootTopic = Topic.of("trace-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("trace-child", Empty.class);
        Topic<Empty> grandchildTopic = Topic.of("trace-grandchild", Empty.class);
        List<CooperationException> seenByChild = new CopyOnWriteArrayList<>();
        Saga<Empty> root = Saga.on(rootTopic, "trace-root-saga")
                .step("r0", step -> step.launch(childTopic, new Empty()))
                .build();
        Saga<Empty> child = Saga.on(childTopic, "trace-child-saga")
                .step("c0", step -> step.launch(grandchildTopic, new Empty()))
                .onChildFailure((step, failure) -> {
                    seenByChild.add(failure);
                    throw failure;
                })
                .build();
        Saga<Empty> grandchild = Saga.on(grandchildTopic, "trace-grandchild-saga")
                .step("g0", step -> {
                    throw new IllegalStateException("deep failure");
                })
                .build();

        List<Event> events;
        String engineId;
        try (CoopEngine engine = Coop.engine(dataSource).register(root, child, grandchild).start()) {
            engineId = engine.id();
            MessageId id = engine.client().launch(rootTopic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            events = engine.client().events(id);
        }
        Event rootRollingBack = CompensationTest.find(events, e -> e.type() == EventType.ROLLING_BACK
                && "trace-root-saga".equals(e.saga()));
        CooperationException e = CooperationException.of(Failure.fromJson(rootRollingBack.exception()));
        String log = EventLog.table(events);

        assertThat(e).as(log).isInstanceOf(ChildRolledBackException.class);
        assertThat(e.failure().source()).isEqualTo("trace-root-saga[" + engineId + "]");
        Throwable middle = e.getCause();
        assertThat(middle).isInstanceOf(ChildRolledBackException.class);
        assertThat(((CooperationException) middle).failure().source()).isEqualTo("trace-child-saga[" + engineId + "]");
        Throwable deepest = middle.getCause();
        assertThat(deepest).isInstanceOf(CooperationException.class)
                .hasMessage("[trace-grandchild-saga[" + engineId + "]] java.lang.IllegalStateException: deep failure");
        assertThat(deepest.getStackTrace()[0].getClassName()).isEqualTo(FailureJsonTest.class.getName());

        String printed = printed(e);
        int r = printed.indexOf("[trace-root-saga[" + engineId + "]]");
        int c = printed.indexOf("[trace-child-saga[" + engineId + "]]");
        int g = printed.indexOf("[trace-grandchild-saga[" + engineId + "]] java.lang.IllegalStateException: deep");
        assertThat(r).as(printed).isNotNegative();
        assertThat(c).as(printed).isGreaterThan(r);
        assertThat(g).as(printed).isGreaterThan(c);
        assertThat(printed.substring(g)).contains("FailureJsonTest.java");

        String rendered = e.failure().render();
        assertThat(rendered).contains("[in trace-root-saga[", "[in trace-child-saga[", "[in trace-grandchild-saga[",
                "deep failure");
        assertThat(seenByChild).hasSize(1);
        assertThat(seenByChild.getFirst().getCause()).hasMessageContaining("deep failure");
    }

    @Test
    void a_child_failure_written_by_a_foreign_participant_reaches_the_parent_unchanged(DataSource dataSource)
            throws Exception {
        Topic<Empty> rootTopic = Topic.of("foreign-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("foreign-child", Empty.class);
        List<CooperationException> seen = new CopyOnWriteArrayList<>();
        Saga<Empty> root = Saga.on(rootTopic, "foreign-root-saga")
                .step("r0", step -> step.launch(childTopic, new Empty()))
                .onChildFailure((step, failure) -> seen.add(failure))
                .build();
        // the child saga is registered for the topic, but its runs are executed by "another language": this test
        Saga<Empty> placeholder = Saga.on(childTopic, "foreign-child-saga").step("c0", step -> {
        }).build();
        Coop.engine(dataSource).workers(1).register(placeholder).start().close();

        try (CoopEngine engine = Coop.engine(dataSource).workers(2).register(root).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(rootTopic, new Empty());
            Await.until("the root to wait for its child", WAIT,
                    () -> client.statuses(id).equals(List.of(RunStatus.WAITING)));
            UUID childRun = client.events(id).stream()
                    .filter(e -> e.type() == EventType.EMITTED && "foreign-root-saga".equals(e.saga()))
                    .map(e -> e.messageId()).findFirst().map(m -> runOf(dataSource, m)).orElseThrow();
            rollBackAsForeignParticipant(dataSource, childRun, FOREIGN);

            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(seen).hasSize(1);
            CooperationException childFailure = (CooperationException) seen.getFirst().getCause();
            assertThat(childFailure.getClass()).isEqualTo(CooperationException.class);
            assertThat(tree(childFailure.failure().toJson())).isEqualTo(tree(FOREIGN));
        }
    }

    // --- helpers

    static Failure failure(String type) {
        return new Failure("m", type, "s[e]", List.of(), List.of());
    }

    static JsonNode tree(String json) {
        try {
            return JSON.readTree(json);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static String printed(Throwable t) {
        StringWriter out = new StringWriter();
        t.printStackTrace(new PrintWriter(out));
        return out.toString();
    }

    static <T> List<T> iterable(java.util.Iterator<T> it) {
        List<T> list = new java.util.ArrayList<>();
        it.forEachRemaining(list::add);
        return list;
    }

    static UUID runOf(DataSource dataSource, MessageId message) {
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT id FROM coop.run WHERE message_id = ?")) {
            ps.setObject(1, message.value());
            try (var rs = ps.executeQuery()) {
                rs.next();
                return rs.getObject(1, UUID.class);
            }
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** What a participant in another language does to roll back a run that failed (docs/protocol.md). */
    static void rollBackAsForeignParticipant(DataSource dataSource, UUID run, String failure) throws Exception {
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            try (PreparedStatement ps = c.prepareStatement("""
                    WITH r AS (SELECT * FROM coop.run WHERE id = ? FOR UPDATE),
                    ev AS (
                      INSERT INTO coop.event (message_id, type, saga, engine, step, lineage, exception, root_id)
                      SELECT r.message_id, t.type, r.saga, 'python-worker-7', t.step, r.lineage,
                             CASE WHEN t.type = 'ROLLING_BACK' THEN ?::jsonb END, r.root_id
                        FROM r, (VALUES (1, 'SEEN', NULL), (2, 'ROLLING_BACK', 'c0'),
                                        (3, 'ROLLED_BACK', 'Rollback of c0')) AS t(n, type, step)
                       ORDER BY t.n
                    ),
                    done AS (
                      UPDATE coop.run SET status = 'ROLLED_BACK', phase = 'ROLLBACK', failure = ?::jsonb,
                             started_at = clock_timestamp(), finished_at = clock_timestamp(), version = version + 1
                       WHERE id = (SELECT id FROM r)
                    )
                    UPDATE coop.run p
                       SET pending_children = p.pending_children - 1, failed_children = p.failed_children + 1,
                           status = CASE WHEN p.pending_children = 1 THEN 'RUNNABLE' ELSE p.status END,
                           runnable_at = clock_timestamp()
                     WHERE p.id = (SELECT parent_id FROM r) AND p.status = 'WAITING'
                    """)) {
                ps.setObject(1, run);
                ps.setString(2, failure);
                ps.setString(3, failure);
                ps.executeUpdate();
            }
            c.commit();
        }
    }
}
