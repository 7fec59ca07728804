package dev.coop;

import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.annotation.JsonSubTypes;
import com.fasterxml.jackson.annotation.JsonTypeInfo;
import dev.coop.Payloads.Empty;
import dev.coop.test.CoopDatabase;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class ContextTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);

    record Tenant(String id) {
    }

    @JsonTypeInfo(use = JsonTypeInfo.Id.NAME, property = "kind")
    @JsonSubTypes({@JsonSubTypes.Type(value = Card.class, name = "card"),
            @JsonSubTypes.Type(value = Invoice.class, name = "invoice")})
    sealed interface PaymentMethod permits Card, Invoice {
    }

    record Card(String last4) implements PaymentMethod {
    }

    record Invoice(String email, List<Map<String, Object>> lines) implements PaymentMethod {
    }

    static final ContextKey<Tenant> TENANT = ContextKey.of("tenant", Tenant.class);
    static final ContextKey<String> MARK = ContextKey.of("mark", String.class);
    static final ContextKey<String> CHILD_ONLY = ContextKey.of("child-only", String.class);
    static final ContextKey<String> EXTRA = ContextKey.of("extra", String.class);
    static final ContextKey<PaymentMethod> METHOD = ContextKey.of("payment-method", PaymentMethod.class);
    static final ContextKey<String> TEXT = ContextKey.of("text", String.class);
    static final ContextKey<Integer> NOTHING = ContextKey.of("nothing", Integer.class);

    /** An entry no code here knows, with odd spacing, key order and number forms that must survive as they are. */
    static final String OPAQUE = "{\"z\": 1, \"a\":[1.10, null, \"\\\"q\\\"\", 1e3]}";

    @Test
    void context_flows_from_launch_through_steps_to_children_and_never_up(DataSource dataSource) {
        Topic<Empty> rootTopic = Topic.of("ctx-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("ctx-child", Empty.class);
        Map<String, CooperationContext> seen = new ConcurrentHashMap<>();
        Saga<Empty> root = Saga.on(rootTopic, "ctx-root-handler")
                .step("first", step -> {
                    seen.put("root-first", step.context());
                    step.putContext(MARK, "set by first");
                })
                .step("second", step -> {
                    seen.put("root-second", step.context());
                    step.launch(childTopic, new Empty(), CooperationContext.of(EXTRA, "for the child"));
                    step.putContext(MARK, "changed after the launch");
                })
                .step("third", step -> seen.put("root-third", step.context()))
                .build();
        Saga<Empty> child = Saga.on(childTopic, "ctx-child-handler")
                .step("only", step -> {
                    seen.put("child", step.context());
                    step.putContext(CHILD_ONLY, "stays below");
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(root, child).start()) {
            CooperationContext launch = CooperationContext.of(TENANT, new Tenant("acme"))
                    .withRawJson("opaque", OPAQUE);
            MessageId id = engine.client().launch(rootTopic, new Empty(), launch);
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);

            assertThat(seen.get("root-first")).isEqualTo(launch);
            assertThat(seen.get("root-first").get(TENANT)).contains(new Tenant("acme"));
            assertThat(seen.get("root-second").get(MARK)).contains("set by first");
            CooperationContext childContext = seen.get("child");
            assertThat(childContext.get(TENANT)).contains(new Tenant("acme"));
            assertThat(childContext.get(MARK)).contains("set by first"); // the parent's context at the launch
            assertThat(childContext.get(EXTRA)).contains("for the child");
            assertThat(childContext.rawJson("opaque")).contains(OPAQUE); // byte for byte
            assertThat(seen.get("root-third").get(MARK)).contains("changed after the launch");
            assertThat(seen.get("root-third").contains(CHILD_ONLY.name())).isFalse(); // never up
            assertThat(seen.get("root-third").contains(EXTRA.name())).isFalse();

            // the log records the context each message started with, exactly
            List<Event> events = engine.client().events(id);
            Event childEmitted = events.stream()
                    .filter(e -> e.type() == EventType.EMITTED && "ctx-root-handler".equals(e.saga())).findFirst()
                    .orElseThrow();
            assertThat(childEmitted.context()).isEqualTo("{\"extra\":\"for the child\",\"mark\":\"set by first\","
                    + "\"opaque\":" + OPAQUE + ",\"tenant\":{\"id\":\"acme\"}}");
            assertThat(events.getFirst().context())
                    .isEqualTo("{\"opaque\":" + OPAQUE + ",\"tenant\":{\"id\":\"acme\"}}");
        }
    }

    @Test
    void json_edge_cases_survive_a_round_trip_through_the_database(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("ctx-json", Empty.class);
        Map<String, CooperationContext> seen = new ConcurrentHashMap<>();
        String tricky = "quote \" backslash \\ newline \n tab \t unicode é ✓ 𝄞 control \u0001 slash /";
        PaymentMethod invoice = new Invoice("billing@example.com",
                List.of(Map.of("item", "plan", "amount", 10), Map.of("nested", Map.of("deep", List.of(1, 2)))));
        Saga<Empty> saga = Saga.on(topic, "ctx-json-handler")
                .step("write", step -> {
                    step.putContext(TEXT, tricky);
                    step.putContext(NOTHING, null);
                    step.putContext(METHOD, invoice);
                })
                .step("read", step -> seen.put("read", step.context()))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            CooperationContext read = seen.get("read");
            assertThat(read.get(TEXT)).contains(tricky);
            assertThat(read.contains(NOTHING.name())).isTrue();
            assertThat(read.rawJson(NOTHING.name())).contains("null");
            assertThat(read.get(NOTHING)).isEmpty();
            assertThat(read.get(METHOD)).contains(invoice);
            assertThat(read.rawJson(METHOD.name()).orElseThrow()).startsWith("{\"kind\":\"invoice\"");
            assertThat(CooperationContext.fromJson(read.toJson())).isEqualTo(read);
        }
    }

    @Test
    void unknown_entries_round_trip_byte_for_byte_and_output_is_sorted() {
        String stored = "{ \"b\" : {\"y\":1,  \"x\":[2, 3.140]} , \"a\":-0.0, \"c\":\"\\u00e9\\n\", \"d\":null }";
        CooperationContext context = CooperationContext.fromJson(stored);
        assertThat(context.names()).containsExactly("a", "b", "c", "d");
        assertThat(context.rawJson("b")).contains("{\"y\":1,  \"x\":[2, 3.140]}");
        assertThat(context.rawJson("a")).contains("-0.0");
        assertThat(context.rawJson("c")).contains("\"\\u00e9\\n\"");
        assertThat(context.toJson())
                .isEqualTo("{\"a\":-0.0,\"b\":{\"y\":1,  \"x\":[2, 3.140]},\"c\":\"\\u00e9\\n\",\"d\":null}");
        assertThat(CooperationContext.fromJson(context.toJson()).toJson()).isEqualTo(context.toJson());
        assertThat(CooperationContext.fromJson(null).isEmpty()).isTrue();
    }

    @Test
    void a_compensation_sees_its_own_context_and_the_parents_at_rollback_time_parent_winning(
            DataSource dataSource) {
        Topic<Empty> rootTopic = Topic.of("ctx-rb-root", Empty.class);
        Topic<Empty> childTopic = Topic.of("ctx-rb-child", Empty.class);
        Map<String, CooperationContext> seen = new ConcurrentHashMap<>();
        Saga<Empty> root = Saga.on(rootTopic, "ctx-rb-root-handler")
                .step("launch", step -> step.launch(childTopic, new Empty()))
                .step("change", step -> step.putContext(MARK, "parent at rollback time"))
                .step("fail", step -> {
                    throw new IllegalStateException("boom");
                })
                .build();
        Saga<Empty> child = Saga.on(childTopic, "ctx-rb-child-handler")
                .step("work", step -> {
                    step.putContext(MARK, "child's own");
                    step.putContext(CHILD_ONLY, "child's own too");
                })
                .compensateWith((step, cause) -> seen.put("compensation", step.context()))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(root, child).start()) {
            MessageId id = engine.client().launch(rootTopic, new Empty(), CooperationContext.of(TENANT,
                    new Tenant("t1")));
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            CooperationContext compensation = seen.get("compensation");
            assertThat(compensation.get(MARK)).contains("parent at rollback time");
            assertThat(compensation.get(CHILD_ONLY)).contains("child's own too");
            assertThat(compensation.get(TENANT)).contains(new Tenant("t1"));
        }
    }

    @Test
    void bad_context_input_is_refused_with_a_clear_message() {
        assertThatThrownBy(() -> ContextKey.of("coop.mine", String.class))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("reserved");
        assertThatThrownBy(() -> ContextKey.of("has space", String.class))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("Invalid context key 'has space'");
        assertThatThrownBy(() -> CooperationContext.empty().withRawJson("x", "{not json"))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("'x' is not valid JSON");
        assertThatThrownBy(() -> CooperationContext.empty().withRawJson("x", "1 2"))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("more than one JSON value");
        assertThatThrownBy(() -> CooperationContext.fromJson("[1]"))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("must be a JSON object");
        assertThatThrownBy(() -> CooperationContext.of(TEXT, "x").get(ContextKey.of("text", Integer.class)))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("'text' cannot be read as");
    }
}
