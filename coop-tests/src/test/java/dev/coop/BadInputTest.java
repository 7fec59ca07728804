package dev.coop;

import dev.coop.failure.CoopStoreException;
import dev.coop.failure.CoopTimeoutException;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.zaxxer.hikari.HikariDataSource;
import dev.coop.Payloads.Empty;
import dev.coop.test.CoopDatabase;
import dev.coop.test.CoopTables;
import dev.coop.test.EventLog;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Bad input gets a CoopValidationException naming the bad value, and nothing is half-written. */
class BadInputTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);
    static final ObjectMapper JSON = new ObjectMapper();

    record Text(String text) {
    }

    record Counted(String count) {
    }

    record Counter(int count) {
    }

    /** Refers to itself: Jackson cannot write it. */
    static final class SelfReferencing {
        public SelfReferencing getSelf() {
            return this;
        }
    }

    /** A cycle through two objects. */
    static final class Node {
        private Node next;

        public Node getNext() {
            return next;
        }
    }

    /** A getter that throws while Jackson writes it. */
    static final class ThrowingGetter {
        public String getValue() {
            throw new IllegalStateException("getter exploded");
        }
    }

    /** No properties at all: Jackson refuses empty beans by default. */
    static final class NoProperties {
    }

    static Saga<Empty> anySaga(String name) {
        return Saga.on(Topic.of(name + "-topic", Empty.class), name).step("one", step -> {
        }).build();
    }

    @Test
    void invalid_topic_names_are_refused_with_the_name_in_the_message() {
        String tooLong = "t".repeat(201);
        for (String name : Arrays.asList("", " ", "has space", "-leading-dash", "quote'", "semi;colon", "tab\there",
                "ünïcode", tooLong)) {
            assertThatThrownBy(() -> Topic.of(name, Empty.class)).as("topic name [%s]", name)
                    .isInstanceOf(CoopValidationException.class)
                    .hasMessageContaining("Invalid topic name '" + name + "'")
                    .hasMessageContaining("1 to 200");
        }
        assertThatThrownBy(() -> Topic.of(null, Empty.class)).isInstanceOf(CoopValidationException.class)
                .hasMessage("Topic name is missing (null)");
        assertThat(Topic.of("t".repeat(200), Empty.class).name()).hasSize(200);
    }

    @Test
    void payloads_that_cannot_be_serialized_are_refused_naming_type_and_topic(DataSource dataSource) {
        CoopClient client = Coop.client(dataSource);
        Node a = new Node();
        Node b = new Node();
        a.next = b;
        b.next = a;
        List<Object> payloads = List.of(new SelfReferencing(), a, new ThrowingGetter(), new NoProperties());
        for (Object payload : payloads) {
            @SuppressWarnings("unchecked")
            Topic<Object> topic = (Topic<Object>) (Topic<?>) Topic.of("unserializable", payload.getClass());
            assertThatThrownBy(() -> client.launch(topic, payload)).as(payload.getClass().getSimpleName())
                    .isInstanceOf(CoopValidationException.class)
                    .hasMessageContaining(payload.getClass().getName())
                    .hasMessageContaining("topic 'unserializable'")
                    .hasMessageContaining("cannot be serialized to JSON");
        }
        assertThatThrownBy(() -> client.launch(Topic.of("unserializable", ThrowingGetter.class), new ThrowingGetter()))
                .hasMessageContaining("getter exploded");
    }

    @Test
    void a_null_payload_is_refused(DataSource dataSource) {
        CoopClient client = Coop.client(dataSource);
        assertThatThrownBy(() -> client.launch(Topic.of("null-payload", Empty.class), null))
                .isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("Payload for topic 'null-payload' is null");
    }

    @Test
    void a_payload_over_the_size_limit_is_refused_with_its_size_and_the_limit(DataSource dataSource) {
        CoopClient client = CoopClient.builder(dataSource).maxPayloadBytes(100).build();
        Topic<Text> topic = Topic.of("oversized", Text.class);
        Text big = new Text("x".repeat(200));
        assertThatThrownBy(() -> client.launch(topic, big))
                .isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("Payload for topic 'oversized' is 211 bytes of JSON")
                .hasMessageContaining("limit of 100 bytes")
                .hasMessageContaining("maxPayloadBytes");
        // multi-byte characters count as bytes, not characters
        Text wide = new Text("é".repeat(50));
        assertThatThrownBy(() -> client.launch(topic, wide))
                .isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("is 111 bytes of JSON");
        assertThat(client.launch(topic, new Text("x".repeat(89)))).isNotNull(); // exactly 100 bytes
        assertThatThrownBy(() -> CoopClient.builder(dataSource).maxPayloadBytes(1))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("was 1");
        assertThatThrownBy(() -> Coop.engine(dataSource).maxPayloadBytes(65 * 1024 * 1024))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("64 MiB");
    }

    @Test
    void a_step_launching_an_oversized_payload_fails_with_the_reason_recorded(DataSource dataSource)
            throws IOException {
        Topic<Empty> topic = Topic.of("oversized-from-step", Empty.class);
        Topic<Text> childTopic = Topic.of("oversized-from-step-child", Text.class);
        Saga<Empty> saga = Saga.on(topic, "oversized-from-step-handler")
                .step("launch-big", step -> step.launch(childTopic, new Text("y".repeat(500))))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).maxPayloadBytes(200).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Empty());
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            Event failed = engine.client().events(id).stream().filter(e -> e.type() == EventType.ROLLING_BACK)
                    .findFirst().orElseThrow();
            assertThat(failed.step()).isEqualTo("launch-big");
            JsonNode failure = JSON.readTree(failed.exception());
            assertThat(failure.get("type").asText()).isEqualTo(CoopValidationException.class.getName());
            assertThat(failure.get("message").asText()).contains("oversized-from-step-child")
                    .contains("over the limit of 200 bytes");
        }
    }

    /**
     * PostgreSQL's jsonb cannot store the character U+0000, which Jackson writes as {@code \u0000}. Such a payload is
     * bad input like any unserializable one: it must be refused by validation with a CoopValidationException, not
     * surface as a CoopStoreException (which says the database failed and invites a retry that can never succeed).
     */
    @Test
    void a_payload_containing_a_nul_character_is_refused_as_bad_input(DataSource dataSource) {
        CoopClient client = Coop.client(dataSource);
        Topic<Text> topic = Topic.of("nul-character", Text.class);
        assertThatThrownBy(() -> client.launch(topic, new Text("before\u0000after")))
                .isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("topic 'nul-character'");
    }

    @Test
    void sagas_without_steps_or_with_duplicate_or_invalid_step_names_are_refused() {
        Topic<Empty> topic = Topic.of("saga-definitions", Empty.class);
        assertThatThrownBy(() -> Saga.on(topic, "no-steps").build())
                .isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("Saga 'no-steps' has no steps");
        assertThatThrownBy(() -> Saga.on(topic, "duplicate-steps").step("same", step -> {
        }).step("same", step -> {
        })).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("Saga 'duplicate-steps' already has a step named 'same'");
        for (String stepName : Arrays.asList("", "   ", "line\nbreak", "s".repeat(201), null)) {
            assertThatThrownBy(() -> Saga.on(topic, "bad-step-names").step(stepName, step -> {
            })).as("step name [%s]", stepName).isInstanceOf(CoopValidationException.class)
                    .hasMessageContaining("Invalid step name '" + stepName + "' in saga 'bad-step-names'");
        }
        assertThatThrownBy(() -> Saga.on(topic, "null-body").step("one", null))
                .isInstanceOf(NullPointerException.class).hasMessageContaining("'one'");
        assertThatThrownBy(() -> Saga.on(null, "no-topic")).isInstanceOf(NullPointerException.class)
                .hasMessageContaining("topic");
    }

    @Test
    void invalid_saga_engine_and_schema_names_are_refused_with_the_name_in_the_message(DataSource dataSource) {
        Topic<Empty> topic = Topic.of("names", Empty.class);
        for (String name : Arrays.asList("", "has space", "-dash-first", "quote'", "s".repeat(201))) {
            assertThatThrownBy(() -> Saga.on(topic, name)).as("saga name [%s]", name)
                    .isInstanceOf(CoopValidationException.class)
                    .hasMessageContaining("Invalid saga name '" + name + "'");
        }
        assertThatThrownBy(() -> Saga.on(topic, null)).isInstanceOf(CoopValidationException.class)
                .hasMessage("Saga name is missing (null)");
        for (String name : Arrays.asList("", "has space", "e".repeat(64), "semi;colon", null)) {
            assertThatThrownBy(() -> Coop.engine(dataSource).name(name)).as("engine name [%s]", name)
                    .isInstanceOf(CoopValidationException.class)
                    .hasMessageContaining("Invalid engine name '" + name + "'");
        }
        for (String schema : Arrays.asList("", "Upper", "1starts_with_digit", "has-dash", "x; DROP TABLE y",
                "s".repeat(51), null)) {
            assertThatThrownBy(() -> Coop.engine(dataSource).schema(schema)).as("schema [%s]", schema)
                    .isInstanceOf(CoopValidationException.class)
                    .hasMessageContaining("Invalid schema name '" + schema + "'");
            assertThatThrownBy(() -> CoopClient.builder(dataSource).schema(schema)).as("client schema [%s]", schema)
                    .isInstanceOf(CoopValidationException.class)
                    .hasMessageContaining("Invalid schema name '" + schema + "'");
        }
    }

    @Test
    void invalid_engine_settings_are_refused_with_the_value_in_the_message(DataSource dataSource) {
        for (int workers : new int[]{0, -1, 1025}) {
            assertThatThrownBy(() -> Coop.engine(dataSource).workers(workers)).as("workers %d", workers)
                    .isInstanceOf(CoopValidationException.class)
                    .hasMessageContaining("workers must be between 1 and 1024, was " + workers);
        }
        for (Duration interval : Arrays.asList(Duration.ZERO, Duration.ofMillis(9), Duration.ofMillis(-5),
                Duration.ofHours(2), null)) {
            assertThatThrownBy(() -> Coop.engine(dataSource).pollInterval(interval)).as("poll interval %s", interval)
                    .isInstanceOf(CoopValidationException.class)
                    .hasMessageContaining("pollInterval must be between 10 ms and 1 hour, was " + interval);
        }
        assertThatThrownBy(() -> Coop.engine(dataSource).shutdownTimeout(Duration.ofSeconds(-1)))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("shutdownTimeout");
        assertThatThrownBy(() -> Coop.engine(dataSource).start())
                .isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("An engine needs at least one saga");
    }

    @Test
    void two_sagas_with_the_same_name_in_one_engine_are_refused(DataSource dataSource) {
        Saga<Empty> first = anySaga("twin");
        Saga<Text> second = Saga.on(Topic.of("twin-other-topic", Text.class), "twin").step("x", step -> {
        }).build();
        assertThatThrownBy(() -> Coop.engine(dataSource).register(first, second))
                .isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("Two sagas are named 'twin'");
        assertThatThrownBy(() -> Coop.engine(dataSource).register(first).register(first))
                .isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("Two sagas are named 'twin'");
    }

    @Test
    void a_pool_too_small_for_the_workers_is_refused_naming_pool_and_sizes(DataSource dataSource) {
        HikariDataSource small = db.newDataSource(2);
        assertThatThrownBy(() -> Coop.engine(small).workers(8).register(anySaga("small-pool")).start())
                .isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("'" + small.getPoolName() + "'")
                .hasMessageContaining("allows 2 connections")
                .hasMessageContaining("needs at least 10")
                .hasMessageContaining("8 workers");
        assertThatThrownBy(() -> Coop.engine(small).workers(1).notifications(true)
                .register(anySaga("small-pool")).start())
                .isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("needs at least 3");
        // nothing was registered by the refused engines
        assertThat(CoopTables.of(dataSource).registeredTopic("small-pool")).isNull();
    }

    @Test
    void a_saga_name_registered_on_another_topic_is_refused_until_retired(DataSource dataSource) {
        Saga<Empty> original = Saga.on(Topic.of("moving-saga-a", Empty.class), "moving-saga").step("x", step -> {
        }).build();
        Saga<Empty> moved = Saga.on(Topic.of("moving-saga-b", Empty.class), "moving-saga").step("x", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(dataSource).workers(1).register(original).start()) {
            // registered
        }
        assertThatThrownBy(() -> Coop.engine(dataSource).workers(1).register(moved).start())
                .isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("Saga 'moving-saga' is registered for topic 'moving-saga-a'")
                .hasMessageContaining("not for topic 'moving-saga-b'")
                .hasMessageContaining("retire");
        assertThat(CoopTables.of(dataSource).registeredTopic("moving-saga")).isEqualTo("moving-saga-a");
    }

    @Test
    void a_payload_the_sagas_type_cannot_read_fails_the_run_with_the_reason_recorded(DataSource dataSource)
            throws IOException {
        Topic<Counted> written = Topic.of("type-mismatch", Counted.class);
        Topic<Counter> read = Topic.of("type-mismatch", Counter.class);
        List<Integer> ran = new ArrayList<>();
        Saga<Counter> saga = Saga.on(read, "type-mismatch-handler")
                .step("count", step -> ran.add(step.payload().count()))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start()) {
            MessageId id = engine.client().launch(written, new Counted("not a number"));
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(ran).isEmpty();
            List<Event> events = engine.client().events(id);
            Event failed = events.stream().filter(e -> e.type() == EventType.ROLLING_BACK).findFirst()
                    .orElseThrow(() -> new AssertionError(EventLog.table(events)));
            assertThat(failed.step()).isEqualTo("count");
            JsonNode failure = JSON.readTree(failed.exception());
            // the failure type is part of the protocol other services read: a public type, not an engine internal
            assertThat(failure.get("type").asText()).as("failure type").doesNotStartWith("dev.coop.internal.");
            String message = failure.get("message").asText();
            assertThat(message).contains(id.toString())
                    .contains("topic 'type-mismatch'")
                    .contains("cannot be read as " + Counter.class.getName())
                    .contains("not a number");
            assertThat(events.getLast().type()).isEqualTo(EventType.ROLLED_BACK);

            // the saga still handles payloads it can read
            MessageId fine = engine.client().launch(read, new Counter(3));
            assertThat(engine.client().awaitCompletion(fine, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(ran).containsExactly(3);
        }
    }

    @Test
    void awaiting_an_unknown_message_or_past_the_timeout_fails_naming_the_message(DataSource dataSource) {
        CoopClient client = Coop.client(dataSource);
        MessageId unknown = new MessageId(UUID.randomUUID());
        assertThatThrownBy(() -> client.awaitCompletion(unknown, WAIT))
                .isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("No message " + unknown);
        assertThatThrownBy(() -> client.statuses(unknown))
                .isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("No message " + unknown);

        // a saga that is registered but whose engine is not running: its run stays RUNNABLE
        Saga<Empty> saga = anySaga("awaited-too-long");
        try (CoopEngine engine = Coop.engine(dataSource).workers(1).register(saga).start()) {
            // registered
        }
        MessageId id = client.launch(saga.topic(), new Empty());
        assertThatThrownBy(() -> client.awaitCompletion(id, Duration.ofMillis(100)))
                .isInstanceOf(CoopTimeoutException.class)
                .hasMessageContaining("Message " + id)
                .hasMessageContaining("1 run of saga 'awaited-too-long' runnable with no running engine");

        assertThatThrownBy(() -> MessageId.parse("not-a-uuid"))
                .isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("'not-a-uuid'");
    }
}
