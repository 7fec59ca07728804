package dev.coop.render;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Hierarchy;
import dev.coop.inspect.ParkedRun;
import dev.coop.RunStatus;
import dev.coop.inspect.RunSummary;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

class JsonRendererTest {
    static final JsonRenderer JSON = Renderers.json();
    static final ObjectMapper MAPPER = new ObjectMapper();

    static Stream<Hierarchy> hierarchies() {
        return Stream.of(Fixtures.success(), Fixtures.rollback(), Fixtures.failedRollback(), Fixtures.cancellation(),
                Fixtures.running());
    }

    @ParameterizedTest
    @MethodSource("hierarchies")
    void a_hierarchy_round_trips_through_jackson(Hierarchy hierarchy) throws Exception {
        String json = JSON.render(hierarchy);
        assertThat(JSON.readHierarchy(json)).isEqualTo(hierarchy);
        // and through a plain Jackson tree, as another tool would read and write it
        JsonNode tree = MAPPER.readTree(json);
        assertThat(JSON.readHierarchy(MAPPER.writeValueAsString(tree))).isEqualTo(hierarchy);
        assertThat(new JsonRenderer(false).render(hierarchy)).doesNotContain("\n").isEqualTo(tree.toString());
    }

    @Test
    void a_run_held_back_by_its_saga_limits_says_why_and_round_trips() throws Exception {
        dev.coop.inspect.RunView waiting = Fixtures.waitingForSlot();
        String json = JSON.render(waiting);
        assertThat(MAPPER.readTree(json).get("waitingFor").asText()).isEqualTo("waiting for a slot (3 of 3 busy)");
        assertThat(JSON.readRun(json)).isEqualTo(waiting);
        assertThat(MAPPER.readTree(JSON.render(Fixtures.running())).get("runs").get(0).has("waitingFor")).isFalse();
        assertThat(TextRendererTest.PLAIN.render(waiting)).contains("RUNNABLE (waiting for a slot (3 of 3 busy))");
    }

    /**
     * Reading a tree, and building its JSON nodes, do not recurse: 5,000 levels (a saga that launches itself) on a
     * 256 KB stack. Recursive reading needed more than the default 1 MB for 1,000 levels once the JIT compiled it
     * (HostileCliTest overflowed once); Jackson's own writing of the nodes recurses, 1,000 levels in 512 KB.
     */
    @Test
    void trees_thousands_of_levels_deep_are_read_without_recursion() throws Exception {
        int levels = 5_000;
        StringBuilder open = new StringBuilder();
        for (int i = 0; i < levels; i++) {
            open.append("{\"runId\":\"").append(java.util.UUID.randomUUID()).append("\",\"messageId\":\"")
                    .append(java.util.UUID.randomUUID()).append("\",\"topic\":\"t\",\"saga\":\"s\",\"lineage\":[\"")
                    .append(java.util.UUID.randomUUID()).append("\"],\"status\":\"COMMITTED\",\"steps\":[],")
                    .append("\"collapsed\":[],\"children\":[");
        }
        String json = "{\"messageId\":\"" + java.util.UUID.randomUUID() + "\",\"topic\":\"t\",\"runs\":[" + open
                + "]}".repeat(levels) + "]}";
        Hierarchy[] read = new Hierarchy[1];
        JsonNode[] built = new JsonNode[1];
        Throwable[] thrown = new Throwable[1];
        Thread small = new Thread(null, () -> {
            try {
                read[0] = JSON.readHierarchy(json);
                built[0] = JSON.run(read[0].runs().getFirst());
            } catch (Throwable t) {
                thrown[0] = t;
            }
        }, "small-stack", 256 * 1024);
        small.start();
        small.join();
        assertThat(thrown[0]).isNull();
        assertThat(read[0].runs().getFirst().flatten()).hasSize(levels);
        JsonNode deepest = built[0];
        for (int i = 1; i < levels; i++) {
            assertThat(deepest.get("children")).hasSize(1);
            deepest = deepest.get("children").get(0);
        }
        assertThat(deepest.get("children")).isEmpty();
    }

    @Test
    void the_hierarchy_form_is_as_documented() {
        Golden.assertMatches("tree-rollback.json", Masking.mask(JSON.render(Fixtures.rollback())));
    }

    @Test
    void field_names_are_stable_and_absent_values_are_null() throws Exception {
        JsonNode n = MAPPER.readTree(JSON.render(Fixtures.running()));
        assertThat(fields(n)).containsExactly("messageId", "topic", "launchedAt", "finished", "outcome", "runs");
        assertThat(n.get("outcome").isNull()).isTrue();
        JsonNode run = n.get("runs").get(0);
        assertThat(fields(run)).containsExactly("runId", "messageId", "topic", "saga", "sagaVersion", "lineage",
                "status",
                "rollingBack", "createdAt", "startedAt", "finishedAt", "durationMs", "failure", "steps", "children",
                "collapsed");
        assertThat(run.get("finishedAt").isNull()).isTrue();
        assertThat(fields(run.get("steps").get(0))).containsExactly("name", "kind", "engine", "startedAt",
                "endedAt", "durationMs", "launched", "launchedCount", "failure");
        assertThat(run.get("steps").get(0).get("durationMs").asLong()).isEqualTo(9);
    }

    @Test
    void events_runs_and_parked_runs_round_trip() throws Exception {
        var failure = Fixtures.rollback().runs().getFirst().failure();
        List<Event> events = List.of(
                new Event(1, Fixtures.ORDER, EventType.EMITTED, null, null, null,
                        new dev.coop.Lineage(List.of(Fixtures.ORDER.value())), Fixtures.at(0), null, null, null),
                new Event(7, Fixtures.ORDER, EventType.ROLLING_BACK, "order", Fixtures.SHOP, "reserve-stock",
                        Fixtures.orderLineage(), Fixtures.at(41), Fixtures.at(38), failure.toJson(), "{\"a\":1}"));
        List<Event> read = JSON.readEvents(JSON.renderEvents(events));
        assertThat(read).usingRecursiveComparison().ignoringFields("exception").isEqualTo(events);
        assertThat(MAPPER.readTree(read.get(1).exception())).isEqualTo(MAPPER.readTree(failure.toJson()));
        JsonNode rendered = MAPPER.readTree(JSON.renderEvents(events)).get(1);
        assertThat(rendered.get("exception").get("type").asText())
                .isEqualTo("dev.coop.failure.ChildRolledBackException");
        assertThat(rendered.get("context").get("a").asInt()).isEqualTo(1);

        List<RunSummary> runs = List.of(new RunSummary(Fixtures.ORDER_RUN, Fixtures.ORDER, "order-placed", "order",
                Fixtures.orderLineage(), RunStatus.ROLLED_BACK, Fixtures.at(1), Fixtures.at(60), "Card declined"),
                new RunSummary(Fixtures.PAYMENT_RUN, Fixtures.PAYMENT, "payment-requested", "payment",
                        Fixtures.paymentLineage(), RunStatus.WAITING, Fixtures.at(12), null, null));
        assertThat(JSON.readRuns(JSON.renderRuns(runs))).isEqualTo(runs);

        List<ParkedRun> parked = List.of(new ParkedRun(Fixtures.PAYMENT_RUN, Fixtures.PAYMENT, "payment",
                Fixtures.paymentLineage(), 0, 5, failure, Fixtures.at(12)));
        assertThat(JSON.readParked(JSON.renderParked(parked))).isEqualTo(parked);
    }

    private static List<String> fields(JsonNode n) {
        List<String> names = new java.util.ArrayList<>();
        n.fieldNames().forEachRemaining(names::add);
        return names;
    }
}
