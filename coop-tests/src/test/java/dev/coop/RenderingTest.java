package dev.coop;

import dev.coop.inspect.Event;
import dev.coop.inspect.Hierarchy;
import dev.coop.inspect.Outcome;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.coop.Payloads.Empty;
import dev.coop.render.JsonRenderer;
import dev.coop.render.Masking;
import dev.coop.render.RenderOptions;
import dev.coop.render.Renderers;
import dev.coop.render.TextRenderer;
import dev.coop.test.CoopDatabase;
import dev.coop.test.StepGate;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The text and JSON renderings of real hierarchies, written by the engine: success, rollback, failed rollback and
 * cancellation, each compared (ids, engine ids, times and durations masked) with a golden file under
 * {@code src/test/resources/golden}. Each hierarchy is a chain (one saga per topic), so its shape is deterministic.
 */
class RenderingTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);
    static final TextRenderer TEXT = new TextRenderer(RenderOptions.defaults());
    static final JsonRenderer JSON = Renderers.json();

    @Test
    void success(DataSource dataSource) {
        Topic<Empty> orders = Topic.of("render-ok-order", Empty.class);
        Topic<Empty> payments = Topic.of("render-ok-payment", Empty.class);
        Saga<Empty> order = Saga.on(orders, "render-ok-order-saga")
                .step("reserve-stock", step -> step.launch(payments, new Empty()))
                .step("confirm", step -> {
                })
                .build();
        Saga<Empty> payment = Saga.on(payments, "render-ok-payment-saga").step("charge", step -> {
        }).build();
        assertGolden("success", dataSource, Outcome.COMMITTED, orders, order, payment);
    }

    @Test
    void rollback(DataSource dataSource) {
        Topic<Empty> orders = Topic.of("render-rb-order", Empty.class);
        Topic<Empty> payments = Topic.of("render-rb-payment", Empty.class);
        Saga<Empty> order = Saga.on(orders, "render-rb-order-saga")
                .step("reserve-stock", step -> step.launch(payments, new Empty()))
                .compensateWith((step, cause) -> {
                })
                .step("confirm", step -> {
                })
                .build();
        Saga<Empty> payment = Saga.on(payments, "render-rb-payment-saga").step("charge", step -> {
            throw new IllegalStateException("Card declined");
        }).build();
        assertGolden("rollback", dataSource, Outcome.ROLLED_BACK, orders, order, payment);
    }

    @Test
    void failed_rollback(DataSource dataSource) {
        Topic<Empty> orders = Topic.of("render-frb-order", Empty.class);
        Topic<Empty> payments = Topic.of("render-frb-payment", Empty.class);
        Saga<Empty> order = Saga.on(orders, "render-frb-order-saga")
                .step("reserve-stock", step -> step.launch(payments, new Empty()))
                .step("confirm", step -> {
                    throw new IllegalStateException("Warehouse closed");
                })
                .build();
        Saga<Empty> payment = Saga.on(payments, "render-frb-payment-saga").step("charge", step -> {
        }).compensateWith((step, cause) -> {
            throw new IllegalStateException("Refund refused: account frozen");
        }).build();
        assertGolden("failed-rollback", dataSource, Outcome.ROLLBACK_FAILED, orders, order, payment);
    }

    @Test
    void cancellation(DataSource dataSource) throws Exception {
        Topic<Empty> orders = Topic.of("render-cancel-order", Empty.class);
        Topic<Empty> payments = Topic.of("render-cancel-payment", Empty.class);
        StepGate gate = new StepGate(WAIT);
        Saga<Empty> order = Saga.on(orders, "render-cancel-order-saga")
                .step("reserve-stock", step -> step.launch(payments, new Empty()))
                .compensateWith((step, cause) -> {
                })
                .step("confirm", step -> {
                })
                .build();
        Saga<Empty> payment = Saga.on(payments, "render-cancel-payment-saga").step("charge", step -> gate.pass())
                .build();
        // one worker: the held step's own worker records its give-up (with more workers, another one may claim the
        // run first and record a give-up between steps instead, which renders differently)
        try (CoopEngine engine = Coop.engine(dataSource).workers(1).register(order, payment).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(orders, new Empty());
            gate.awaitArrivals(1, WAIT);
            assertThat(client.cancel(id, "Customer called to cancel")).isEqualTo(CancelResult.REQUESTED);
            gate.open();
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            compare("cancellation", client, id);
        } finally {
            gate.open();
        }
    }

    private static void assertGolden(String name, DataSource dataSource, Outcome expected, Topic<Empty> topic,
            Saga<?>... sagas) {
        try (CoopEngine engine = Coop.engine(dataSource).register(sagas).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(expected);
            compare(name, engine.client(), id);
        }
    }

    private static void compare(String name, CoopClient client, MessageId id) {
        Hierarchy tree = client.tree(id);
        String text = TEXT.render(tree);
        Golden.assertMatches("tree-" + name + ".txt", Masking.mask(text));
        Golden.assertMatches("events-" + name + ".txt", Masking.mask(TEXT.renderEvents(renumbered(client.events(id)))));
        assertThat(JSON.readHierarchy(JSON.render(tree))).as("JSON round trip").isEqualTo(tree);
        ObjectNode json = JSON.hierarchy(tree);
        withoutFrames(json);
        Golden.assertMatches("tree-" + name + ".json", Masking.mask(JSON.write(json)));
    }

    /**
     * Event ids depend on what other tests wrote first, and the time column's width on the times: number them from 1
     * and give them one time.
     */
    private static List<Event> renumbered(List<Event> events) {
        List<Event> out = new ArrayList<>();
        for (int i = 0; i < events.size(); i++) {
            Event e = events.get(i);
            OffsetDateTime t = events.getFirst().createdAt();
            out.add(new Event(i + 1, e.messageId(), e.type(), e.saga(), e.engine(), e.step(), e.lineage(), t,
                    e.startedAt() == null ? null : t, e.exception(), e.context()));
        }
        return out;
    }

    /** Stack frames name lines of the engine's code, which changes; the golden files keep the rest. */
    private static void withoutFrames(JsonNode node) {
        if (node instanceof ObjectNode o && o.has("stackTrace")) {
            o.putArray("stackTrace");
        }
        node.forEach(RenderingTest::withoutFrames);
    }
}
