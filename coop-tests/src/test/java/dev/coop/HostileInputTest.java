package dev.coop;

import dev.coop.failure.CoopTimeoutException;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.Hierarchy;
import dev.coop.inspect.Outcome;
import dev.coop.inspect.RunQuery;
import dev.coop.join.JoinId;
import dev.coop.schedule.Schedule;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.Payloads.Empty;
import dev.coop.render.RenderOptions;
import dev.coop.render.TextRenderer;
import dev.coop.test.CoopDatabase;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Odd and hostile values are refused where they enter, with a message naming the value, instead of failing later
 * inside a run (or, for text shown on a terminal, are shown harmlessly).
 */
class HostileInputTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    record Text(String text) {
    }

    /** A topic of its own for each test: a saga stays registered for its topic after its engine stopped. */
    static Topic<Text> topic(String name) {
        return Topic.of(name, Text.class);
    }

    static Saga<Empty> anySaga(String name) {
        return Saga.on(Topic.of(name + "-topic", Empty.class), name).step("one", step -> {
        }).build();
    }

    @Test
    void reserved_words_are_refused_as_schema_names_and_every_accepted_keyword_works_unquoted() throws Exception {
        for (String word : List.of("select", "user", "order", "table")) {
            assertThatThrownBy(() -> CoopClient.builder(db.dataSource()).schema(word).build())
                    .as(word).isInstanceOf(CoopValidationException.class)
                    .hasMessageContaining("'" + word + "'").hasMessageContaining("reserved word");
        }
        // every other key word PostgreSQL knows is accepted, so it must work as an unquoted schema qualifier
        List<String> accepted = new java.util.ArrayList<>();
        try (Connection c = db.dataSource().getConnection();
                Statement st = c.createStatement();
                var rs = st.executeQuery("SELECT word FROM pg_get_keywords() WHERE word ~ '^[a-z_][a-z0-9_]*$'")) {
            while (rs.next()) {
                String word = rs.getString(1);
                try {
                    new dev.coop.internal.store.SchemaName(word);
                    accepted.add(word);
                } catch (CoopValidationException refused) {
                    // refused up front: fine
                }
            }
        }
        assertThat(accepted).contains("abort", "action").doesNotContain("select", "user");
        try (Connection c = db.dataSource().getConnection(); Statement st = c.createStatement()) {
            c.setAutoCommit(false);
            for (String word : accepted) {
                st.execute("SAVEPOINT s");
                st.execute("CREATE SCHEMA " + word);
                st.execute("CREATE TABLE " + word + ".run (id int)");
                st.execute("SELECT id FROM " + word + ".run");
                st.execute("ROLLBACK TO SAVEPOINT s");
            }
            c.rollback();
        }
    }

    @Test
    void lone_surrogates_are_refused_in_payloads_and_step_names() {
        Topic<Text> texts = topic("hostile-text");
        try (CoopEngine engine = Coop.engine(db.dataSource()).register(Saga.on(texts, "texts").step("one", step -> {
        }).build()).start()) {
            assertThatThrownBy(() -> engine.client().launch(texts, new Text("broken \uD800 half")))
                    .isInstanceOf(CoopValidationException.class).hasMessageContaining("unpaired UTF-16 surrogate")
                    .hasMessageContaining("hostile-text");
            // a whole pair (an emoji) is fine
            MessageId ok = engine.client().launch(texts, new Text("fine \uD83D\uDE00"));
            assertThat(engine.client().awaitCompletion(ok, WAIT)).isEqualTo(Outcome.COMMITTED);
        }
        assertThatThrownBy(() -> Saga.on(texts, "texts-2").step("half \uDC00", step -> {
        })).isInstanceOf(CoopValidationException.class).hasMessageContaining("surrogate");
    }

    @Test
    void launch_contexts_with_invalid_names_or_fake_deadlines_are_refused_at_launch() {
        Topic<Text> texts = topic("hostile-context");
        try (CoopEngine engine = Coop.engine(db.dataSource()).register(Saga.on(texts, "ctx").step("one", step -> {
        }).build()).start()) {
            CoopClient client = engine.client();
            CooperationContext longKey = CooperationContext.fromJson("{\"" + "k".repeat(10_000) + "\": 1}");
            assertThatThrownBy(() -> client.launch(texts, new Text("x"), longKey))
                    .isInstanceOf(CoopValidationException.class).hasMessageContaining("Invalid context key");
            CooperationContext reserved = CooperationContext.fromJson("{\"coop.secret\": 1}");
            assertThatThrownBy(() -> client.launch(texts, new Text("x"), reserved))
                    .isInstanceOf(CoopValidationException.class).hasMessageContaining("'coop.secret'")
                    .hasMessageContaining("reserved");
            CooperationContext fake = CooperationContext.fromJson("{\"coop.deadline.happy-path\": \"tomorrow\"}");
            assertThatThrownBy(() -> client.launch(texts, new Text("x"), fake))
                    .isInstanceOf(CoopValidationException.class)
                    .hasMessageContaining("'coop.deadline.happy-path' is not a deadline");
            // nothing was launched by the refused calls
            assertThat(client.runs(RunQuery.newest().saga("ctx"))).isEmpty();
        }
    }

    @Test
    void reasons_are_validated_and_capped() {
        Topic<Text> texts = topic("hostile-reasons");
        try (CoopEngine engine = Coop.engine(db.dataSource()).register(Saga.on(texts, "reasons").step("one", step -> {
        }).build()).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(texts, new Text("x"));
            client.awaitCompletion(id, WAIT);
            assertThatThrownBy(() -> client.cancel(id, "nul \0 inside")).isInstanceOf(CoopValidationException.class)
                    .hasMessageContaining("NUL");
            assertThatThrownBy(() -> client.cancel(id, "r".repeat(10_000_000)))
                    .isInstanceOf(CoopValidationException.class).hasMessageContaining("at most 2000 characters");
            assertThatThrownBy(() -> client.rollback(id, "r".repeat(2_001)))
                    .isInstanceOf(CoopValidationException.class).hasMessageContaining("at most 2000 characters");
        }
        assertThatThrownBy(() -> Schedule.cron("0 9 * * \0")).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("control characters");
    }

    @Test
    void out_of_range_instants_and_durations_are_refused_when_built_or_called() {
        Topic<Text> texts = topic("hostile-time");
        assertThatThrownBy(() -> Saga.on(texts, "sleepy").sleep("forever", Duration.ofSeconds(Long.MAX_VALUE)))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("sleep step 'forever'")
                .hasMessageContaining("36525 days");
        assertThatThrownBy(() -> RetryPolicy.attempts(3).initialDelay(Duration.ofDays(400_000L * 365)))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("initialDelay");
        assertThatThrownBy(() -> RetryPolicy.attempts(3).maxDelay(Duration.ofDays(400_000L * 365)))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("maxDelay");
        try (CoopEngine engine = Coop.engine(db.dataSource()).register(Saga.on(texts, "late").step("one", step -> {
        }).build()).start()) {
            CoopClient client = engine.client();
            for (Instant at : List.of(Instant.MAX, Instant.parse("+300000-01-01T00:00:00Z"), Instant.MIN)) {
                assertThatThrownBy(() -> client.launch(texts, new Text("x"), at)).as(at.toString())
                        .isInstanceOf(CoopValidationException.class).hasMessageContaining("start time")
                        .hasMessageContaining("9999-12-31");
            }
            MessageId id = client.launch(texts, new Text("x"));
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            // a huge timeout is "forever", not an ArithmeticException
            assertThat(client.awaitCompletion(id, Duration.ofSeconds(Long.MAX_VALUE))).isEqualTo(Outcome.COMMITTED);
        }
    }

    @Test
    void the_events_of_an_unknown_message_are_refused_like_every_other_read() {
        CoopClient client = CoopClient.builder(db.dataSource()).build();
        MessageId unknown = new MessageId(UUID.randomUUID());
        assertThatThrownBy(() -> client.events(unknown)).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("No message " + unknown);
    }

    @Test
    void ids_are_parsed_strictly() {
        assertThatThrownBy(() -> MessageId.parse("1-1-1-1-1")).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("'1-1-1-1-1'");
        assertThatThrownBy(() -> JoinId.parse("1-1-1-1-1")).isInstanceOf(CoopValidationException.class);
        UUID any = UUID.randomUUID();
        assertThat(MessageId.parse(" " + any.toString().toUpperCase() + " ").value()).isEqualTo(any);
    }

    @Test
    void failure_messages_with_terminal_control_sequences_are_printed_escaped() {
        Topic<Text> texts = topic("hostile-failure");
        String hostile = "\u001b]0;pwned\u0007\u001b[2J\u009b31mred\u202eevil";
        Saga<Text> failing = Saga.on(texts, "hostile-failure").step("fail", step -> {
            throw new IllegalStateException(step.payload().text());
        }).build();
        try (CoopEngine engine = Coop.engine(db.dataSource()).register(failing).start()) {
            CoopClient client = engine.client();
            MessageId id = client.launch(texts, new Text(hostile));
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            Hierarchy tree = client.tree(id);
            for (boolean colors : List.of(false, true)) {
                TextRenderer text = new TextRenderer(RenderOptions.defaults().withColors(colors));
                for (String out : List.of(text.render(tree), text.renderEvents(client.events(id)),
                        text.renderRuns(client.runs(RunQuery.newest().saga("hostile-failure"))))) {
                    assertThat(out).as("colours %s", colors).doesNotContain("\u0007", "\u009b", "\u202e", "\u001b]",
                            "\u001b[2J");
                    assertThat(out).contains("\\u001B]0;pwned\\u0007");
                    if (!colors) {
                        assertThat(out).doesNotContain("\u001b");
                    }
                }
            }
        }
    }

    @Test
    void a_wait_that_times_out_says_which_runs_are_parked_or_have_no_engine() {
        Topic<Text> texts = topic("hostile-wait");
        Saga<Text> parks = Saga.on(texts, "wait-parks").step("call", step -> {
            throw new java.io.IOException("bank unreachable");
        }).retry(RetryPolicy.attempts(1).parkWhenExhausted()).build();
        Saga<Text> orphan = Saga.on(texts, "wait-orphan").step("one", step -> {
        }).build();
        try (CoopEngine gone = Coop.engine(db.dataSource()).register(orphan).start()) {
            // registers 'wait-orphan' for the topic, then stops: its runs will wait for an engine
        }
        try (CoopEngine engine = Coop.engine(db.dataSource()).register(parks).start()) {
            MessageId id = engine.client().launch(texts, new Text("x"));
            dev.coop.test.Await.until("the run parked", WAIT,
                    () -> engine.client().statuses(id).contains(RunStatus.PARKED));
            assertThatThrownBy(() -> engine.client().awaitCompletion(id, Duration.ofMillis(200)))
                    .isInstanceOf(CoopTimeoutException.class)
                    .hasMessageContaining("1 run of saga 'wait-parks' parked")
                    .hasMessageContaining("1 run of saga 'wait-orphan' runnable with no running engine");
        }
    }

    @Test
    void a_wait_goes_on_through_lost_connections_until_the_hierarchy_finishes() throws Exception {
        Topic<Text> texts = topic("hostile-reconnect");
        dev.coop.test.StepGate gate = new dev.coop.test.StepGate(WAIT);
        Saga<Text> slow = Saga.on(texts, "reconnect").step("slow", step -> gate.pass()).build();
        com.zaxxer.hikari.HikariConfig config = new com.zaxxer.hikari.HikariConfig();
        config.setJdbcUrl(db.jdbcUrl());
        config.setUsername(db.server().user());
        config.setPassword(db.server().password());
        config.setMaximumPoolSize(1);
        config.addDataSourceProperty("ApplicationName", "coop-awaiter");
        try (CoopEngine engine = Coop.engine(db.dataSource()).register(slow).start();
                com.zaxxer.hikari.HikariDataSource awaiterPool = new com.zaxxer.hikari.HikariDataSource(config)) {
            CoopClient awaiter = CoopClient.builder(awaiterPool).build();
            MessageId id = engine.client().launch(texts, new Text("x"));
            gate.awaitArrivals(1, WAIT);
            var outcome = java.util.concurrent.CompletableFuture.supplyAsync(() -> awaiter.awaitCompletion(id, WAIT));
            for (int i = 0; i < 5; i++) { // the awaiter's connection dies again and again
                try (Connection c = db.dataSource().getConnection(); Statement st = c.createStatement()) {
                    st.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                            + " WHERE application_name = 'coop-awaiter'");
                }
            }
            gate.open();
            assertThat(outcome.get(WAIT.toSeconds(), java.util.concurrent.TimeUnit.SECONDS))
                    .isEqualTo(Outcome.COMMITTED);
        }
    }

    /** A payload whose field names its own class: the shape that lets a producer pick any class. */
    record Envelope(
            @com.fasterxml.jackson.annotation.JsonTypeInfo(use = com.fasterxml.jackson.annotation.JsonTypeInfo.Id.CLASS) Object data) {
    }

    @Test
    void payload_types_named_by_class_are_instantiated_only_from_allowed_packages() {
        Topic<Envelope> refused = Topic.of("hostile-class", Envelope.class);
        Topic<Envelope> allowed = Topic.of("allowed-class", Envelope.class);
        java.util.concurrent.atomic.AtomicInteger ran = new java.util.concurrent.atomic.AtomicInteger();
        Saga<Envelope> strict = Saga.on(refused, "class-strict").step("read", step -> ran.incrementAndGet()).build();
        Saga<Envelope> open = Saga.on(allowed, "class-allowed").step("read", step -> {
            assertThat(step.payload().data()).isInstanceOf(java.util.concurrent.atomic.AtomicLong.class);
            ran.incrementAndGet();
        }).build();
        try (CoopEngine engine = Coop.engine(db.dataSource()).register(strict).start()) {
            MessageId id = engine.client().launch(refused, new Envelope(new java.util.concurrent.atomic.AtomicLong(7)));
            assertThat(engine.client().awaitCompletion(id, WAIT)).isNotEqualTo(Outcome.COMMITTED);
            assertThat(ran).as("the step never saw the payload").hasValue(0);
            assertThat(dev.coop.render.Renderers.text().render(engine.client().tree(id))).contains("AtomicLong");
        }
        try (CoopEngine engine = Coop.engine(db.dataSource()).register(open)
                .allowPolymorphicTypes("java.util.concurrent.atomic.").start()) {
            MessageId id = engine.client().launch(allowed, new Envelope(new java.util.concurrent.atomic.AtomicLong(7)));
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(ran).hasValue(1);
        }
        assertThatThrownBy(() -> Coop.engine(db.dataSource()).allowPolymorphicTypes(""))
                .isInstanceOf(CoopValidationException.class);
    }

    @Test
    void a_payload_under_the_size_limit_is_readable_whatever_its_longest_string() {
        Topic<Text> texts = topic("hostile-long-string");
        int length = 21_000_000; // longer than Jackson's default read limit for one string (20,000,000)
        java.util.concurrent.atomic.AtomicInteger seen = new java.util.concurrent.atomic.AtomicInteger();
        Saga<Text> saga = Saga.on(texts, "long-string").step("read", step -> seen.set(step.payload().text().length()))
                .build();
        try (CoopEngine engine = Coop.engine(db.dataSource()).register(saga).maxPayloadBytes(24_000_000).start()) {
            MessageId id = engine.client().launch(texts, new Text("y".repeat(length)));
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(seen).hasValue(length);
        }
    }

    /** A DataSource wrapper such as frameworks put around pools; it unwraps to what it wraps. */
    record Wrapper(javax.sql.DataSource target) implements javax.sql.DataSource {
        @Override
        public Connection getConnection() throws java.sql.SQLException {
            return target.getConnection();
        }

        @Override
        public Connection getConnection(String user, String password) throws java.sql.SQLException {
            return target.getConnection(user, password);
        }

        @Override
        public java.io.PrintWriter getLogWriter() throws java.sql.SQLException {
            return target.getLogWriter();
        }

        @Override
        public void setLogWriter(java.io.PrintWriter out) throws java.sql.SQLException {
            target.setLogWriter(out);
        }

        @Override
        public void setLoginTimeout(int seconds) throws java.sql.SQLException {
            target.setLoginTimeout(seconds);
        }

        @Override
        public int getLoginTimeout() throws java.sql.SQLException {
            return target.getLoginTimeout();
        }

        @Override
        public java.util.logging.Logger getParentLogger() throws java.sql.SQLFeatureNotSupportedException {
            return target.getParentLogger();
        }

        @Override
        public <T> T unwrap(Class<T> type) throws java.sql.SQLException {
            return type.isInstance(target) ? type.cast(target) : target.unwrap(type);
        }

        @Override
        public boolean isWrapperFor(Class<?> type) throws java.sql.SQLException {
            return type.isInstance(target) || target.isWrapperFor(type);
        }
    }

    @Test
    void the_pool_check_sees_unstarted_and_wrapped_pools() {
        Topic<Text> texts = topic("hostile-pool");
        Saga<Text> saga = Saga.on(texts, "pool").step("one", step -> {
        }).build();
        // built with setters and not started, as Spring Boot builds it: HikariCP's default of 10 applies
        try (com.zaxxer.hikari.HikariDataSource unstarted = new com.zaxxer.hikari.HikariDataSource()) {
            unstarted.setJdbcUrl(db.jdbcUrl());
            unstarted.setUsername(db.server().user());
            unstarted.setPassword(db.server().password());
            try (CoopEngine engine = Coop.engine(unstarted).register(saga).workers(8).start()) {
                MessageId id = engine.client().launch(texts, new Text("x"));
                assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            }
        }
        // a pool of 1 behind a wrapper: the listener would hold the only connection, so it is refused up front
        try (com.zaxxer.hikari.HikariDataSource tiny = db.newDataSource(1)) {
            assertThatThrownBy(() -> Coop.engine(new Wrapper(tiny)).register(saga).workers(1).start())
                    .isInstanceOf(CoopValidationException.class).hasMessageContaining("allows 1 connections")
                    .hasMessageContaining("needs at least 3");
        }
    }

    @Test
    void a_launch_on_a_topic_nobody_handles_is_shown_and_refused_in_strict_mode() {
        Topic<Text> texts = topic("hostile-typo-parent");
        Topic<Text> misspelt = topic("acount-created");
        Saga<Text> parent = Saga.on(texts, "typo-parent").step("launch", step -> {
            step.launch(misspelt, new Text("x"));
        }).build();
        try (CoopEngine engine = Coop.engine(db.dataSource()).register(parent).start()) {
            MessageId id = engine.client().launch(texts, new Text("x"));
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(dev.coop.render.Renderers.text().render(engine.client().tree(id)))
                    .contains("UNHANDLED: no saga was registered for the topic of message");
        }
        try (CoopEngine strict = Coop.engine(db.dataSource()).register(parent).requireHandlers(true).start()) {
            MessageId id = strict.client().launch(texts, new Text("x"));
            assertThat(strict.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(dev.coop.render.Renderers.text().render(strict.client().tree(id)))
                    .contains("No saga is registered for topic 'acount-created'");
            assertThatThrownBy(() -> strict.client().launch(misspelt, new Text("x")))
                    .isInstanceOf(CoopValidationException.class).hasMessageContaining("'acount-created'");
        }
        CoopClient strictClient = CoopClient.builder(db.dataSource()).requireHandlers(true).build();
        assertThatThrownBy(() -> strictClient.launch(misspelt, new Text("x")))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("'acount-created'");
    }

    @Test
    void a_large_fan_out_is_collapsed_into_counts_with_the_failures_shown() {
        Topic<Text> texts = topic("hostile-fan-parent");
        Topic<Integer> items = Topic.of("hostile-fan-item", Integer.class);
        Saga<Text> parent = Saga.on(texts, "fan-parent").step("fan-out", step -> {
            for (int i = 0; i < 200; i++) {
                step.launch(items, i);
            }
        }).onChildFailure((step, failure) -> {
            // two items failed: carry on without them
        }).build();
        Saga<Integer> item = Saga.on(items, "fan-item").step("one", step -> {
            if (step.payload() % 100 == 7) {
                throw new IllegalStateException("item " + step.payload() + " is broken");
            }
        }).build();
        try (CoopEngine engine = Coop.engine(db.dataSource()).register(parent, item).start()) {
            MessageId id = engine.client().launch(texts, new Text("x"));
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            String tree = dev.coop.render.Renderers.text().render(engine.client().tree(id));
            assertThat(tree).contains("200 runs of fan-item: 198 committed, 2 rolled back", "item 7 is broken",
                    "item 107 is broken");
            assertThat(tree.lines().filter(l -> l.contains("fan-item on hostile-fan-item"))).hasSize(2);
        }
    }
}
