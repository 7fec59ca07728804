package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.coop.Payloads.Empty;
import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.inspect.ParkedRun;
import dev.coop.inspect.RunView;
import dev.coop.render.RenderOptions;
import dev.coop.render.Renderers;
import dev.coop.render.TextRenderer;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import dev.coop.test.CoopTables;
import dev.coop.test.Invariants;
import dev.coop.test.StepGate;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Ordering keys: the runs of a saga whose messages carry the same key run one at a time, whole run after whole run,
 * in launch order; other keys and other sagas go on meanwhile; a held run says what it waits for; nothing strands a
 * key (a parked run holds it until an operator resolves it, a cancelled held run leaves the queue).
 */
class OrderingKeyTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(60);
    static final TextRenderer TEXT = new TextRenderer(RenderOptions.defaults());

    record Transfer(String account, int n) {
    }

    @Test
    void runs_of_one_key_never_overlap_and_keep_launch_order_across_three_engines_while_others_go_on(
            DataSource dataSource) throws Exception {
        Topic<Transfer> topic = Topic.of("okey-ledger", Transfer.class);
        Topic<Transfer> auditTopic = Topic.of("okey-audit", Transfer.class);
        Topic<Empty> bystanderTopic = Topic.of("okey-bystander", Empty.class);
        // a run of several transactions that waits for a child: the key is held from its first step to its end
        Saga<Transfer> ledger = Saga.on(topic, "okey-ledger-saga")
                .step("debit", step -> step.launch(auditTopic, step.payload()))
                .step("credit", step -> {
                })
                .build();
        Saga<Transfer> audit = Saga.on(auditTopic, "okey-audit-saga").step("write", step -> {
        }).build();
        Saga<Empty> bystander = Saga.on(bystanderTopic, "okey-bystander-saga").step("go", step -> {
        }).build();
        int accounts = 6;
        int perAccount = 10;
        int bystanders = 30;
        List<CoopEngine> engines = new ArrayList<>();
        ExecutorService threads = Executors.newFixedThreadPool(3);
        try {
            for (int i = 0; i < 3; i++) {
                HikariDataSource pool = db.newDataSource(4 + 2);
                engines.add(Coop.engine(pool).name("okey-" + i).workers(4).register(ledger, audit, bystander)
                        .start());
            }
            Map<String, List<MessageId>> launchOrder = new HashMap<>();
            List<MessageId> others = Collections.synchronizedList(new ArrayList<>());
            List<Future<?>> launchers = new ArrayList<>();
            for (int t = 0; t < 3; t++) {
                CoopClient client = engines.get(t).client();
                List<String> owned = List.of("acct-" + (2 * t), "acct-" + (2 * t + 1));
                owned.forEach(a -> launchOrder.put(a, Collections.synchronizedList(new ArrayList<>())));
                launchers.add(threads.submit(() -> {
                    for (int i = 0; i < perAccount; i++) {
                        for (String account : owned) {
                            launchOrder.get(account).add(client.launch(topic, new Transfer(account, i),
                                    LaunchOptions.none().orderingKey(account)));
                        }
                        for (int b = 0; b < bystanders / perAccount / 3 + 1; b++) {
                            others.add(client.launch(bystanderTopic, new Empty()));
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> launcher : launchers) {
                launcher.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
            }
            CoopClient observer = Coop.client(dataSource);
            for (MessageId other : others) {
                assertThat(observer.awaitCompletion(other, WAIT)).isEqualTo(Outcome.COMMITTED);
            }
            for (List<MessageId> ids : launchOrder.values()) {
                for (MessageId id : ids) {
                    assertThat(observer.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
                }
            }

            List<Event> events = CoopTables.of(dataSource).allEvents();
            Invariants.assertAll(events);
            Map<MessageId, long[]> span = spans(events, "okey-ledger-saga"); // first and last event id of each run
            assertThat(span).hasSize(accounts * perAccount);
            for (Map.Entry<String, List<MessageId>> account : launchOrder.entrySet()) {
                List<MessageId> ids = account.getValue();
                for (int i = 1; i < ids.size(); i++) {
                    long[] before = span.get(ids.get(i - 1));
                    long[] after = span.get(ids.get(i));
                    assertThat(after[0]).as("%s: run %d started after run %d finished (event ids)", account.getKey(),
                            i, i - 1).isGreaterThan(before[1]);
                }
            }
        } finally {
            threads.shutdownNow();
            engines.forEach(CoopEngine::close);
        }
    }

    /** Per message handled by {@code saga}: the ids of the run's SEEN and of its COMMITTED. */
    static Map<MessageId, long[]> spans(List<Event> events, String saga) {
        Map<MessageId, long[]> span = new HashMap<>();
        for (Event e : events) {
            if (saga.equals(e.saga()) && e.type() == EventType.SEEN) {
                span.computeIfAbsent(e.messageId(), k -> new long[]{0, Long.MAX_VALUE})[0] = e.id();
            }
            if (saga.equals(e.saga()) && e.type() == EventType.COMMITTED) {
                span.computeIfAbsent(e.messageId(), k -> new long[]{0, Long.MAX_VALUE})[1] = e.id();
            }
        }
        return span;
    }

    @Test
    void a_run_whose_key_is_busy_is_held_shown_behind_the_run_ahead_and_released_when_that_run_finishes(
            DataSource dataSource) throws Exception {
        Topic<Transfer> topic = Topic.of("okey-gated", Transfer.class);
        Topic<Empty> bystanderTopic = Topic.of("okey-gated-bystander", Empty.class);
        StepGate gate = new StepGate(WAIT);
        Saga<Transfer> saga = Saga.on(topic, "okey-gated-saga").step("hold", step -> gate.pass()).build();
        Saga<Empty> bystander = Saga.on(bystanderTopic, "okey-gated-bystander-saga").step("go", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(dataSource).workers(4).register(saga, bystander).start()) {
            CoopClient client = engine.client();
            MessageId first = client.launch(topic, new Transfer("acct-1", 1), LaunchOptions.none()
                    .orderingKey("acct-1"));
            gate.awaitArrivals(1, WAIT);
            MessageId second = client.launch(topic, new Transfer("acct-1", 2), LaunchOptions.none()
                    .orderingKey("acct-1").priority(3));
            MessageId otherKey = client.launch(topic, new Transfer("acct-2", 1), LaunchOptions.none()
                    .orderingKey("acct-2"));
            gate.awaitArrivals(2, WAIT); // another key runs while acct-1 is busy
            MessageId other = client.launch(bystanderTopic, new Empty());
            assertThat(client.awaitCompletion(other, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(gate.arrivals()).isEqualTo(2);
            assertThat(client.statuses(second)).containsExactly(RunStatus.HELD);

            RunView ahead = client.tree(first).runs().get(0);
            RunView held = client.tree(second).runs().get(0);
            assertThat(held.status()).isEqualTo(RunStatus.HELD);
            assertThat(held.ordering().orderingKey()).isEqualTo("acct-1");
            assertThat(held.ordering().priority()).isEqualTo(3);
            assertThat(held.ordering().heldBehind()).isEqualTo(ahead.runId());
            assertThat(ahead.ordering().heldBehind()).isNull();
            String text = TEXT.render(client.tree(second));
            assertThat(text).contains("HELD (held behind key 'acct-1': run " + ahead.runId() + " ahead)")
                    .contains("priority 3");
            assertThat(TEXT.render(client.tree(first))).contains("RUNNING  key 'acct-1'") // in its step now
                    .contains("▶ hold  running");
            String json = Renderers.json().render(client.tree(second));
            assertThat(json).contains("\"orderingKey\" : \"acct-1\"").contains("\"priority\" : 3")
                    .contains("\"heldBehind\" : \"" + ahead.runId() + "\"");
            assertThat(Renderers.json().readHierarchy(json).runs().get(0).ordering()).isEqualTo(held.ordering());
            assertThat(client.unfinishedRuns().get(RunStatus.HELD)).isEqualTo(1);

            gate.open();
            for (MessageId id : List.of(first, second, otherKey)) {
                assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            }
            Map<MessageId, long[]> span = spans(CoopTables.of(dataSource).allEvents(), "okey-gated-saga");
            assertThat(span.get(second)[0]).isGreaterThan(span.get(first)[1]);
        } finally {
            gate.open();
        }
    }

    @Test
    void a_parked_run_holds_its_key_until_an_operator_resolves_it(DataSource dataSource) {
        Topic<Transfer> topic = Topic.of("okey-parked", Transfer.class);
        AtomicBoolean broken = new AtomicBoolean(true);
        Saga<Transfer> saga = Saga.on(topic, "okey-parked-saga")
                .step("flaky", step -> {
                    if (step.payload().n() == 1 && broken.get()) {
                        throw new IOException("still broken");
                    }
                })
                .retry(RetryPolicy.attempts(2).initialDelay(Duration.ofMillis(10)).parkWhenExhausted())
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).workers(2).register(saga).start()) {
            CoopClient client = engine.client();
            MessageId first = client.launch(topic, new Transfer("acct-9", 1), LaunchOptions.none()
                    .orderingKey("acct-9"));
            ParkedRun parked = Await.value("the first run parked", WAIT, () -> client.parkedRuns(10).stream()
                    .filter(p -> p.messageId().equals(first)).findFirst().orElse(null));
            MessageId second = client.launch(topic, new Transfer("acct-9", 2), LaunchOptions.none()
                    .orderingKey("acct-9"));
            MessageId free = client.launch(topic, new Transfer("acct-8", 2), LaunchOptions.none()
                    .orderingKey("acct-8"));
            assertThat(client.awaitCompletion(free, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.statuses(second)).containsExactly(RunStatus.HELD);
            assertThat(client.tree(second).runs().get(0).ordering().heldBehind()).isEqualTo(parked.runId());

            broken.set(false);
            assertThat(client.retryNow(parked.runId())).isTrue();
            assertThat(client.awaitCompletion(first, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.awaitCompletion(second, WAIT)).isEqualTo(Outcome.COMMITTED);
        }
    }

    @Test
    void a_cancelled_held_run_leaves_the_queue_at_once_and_the_next_waits_for_the_run_ahead(DataSource dataSource)
            throws Exception {
        Topic<Transfer> topic = Topic.of("okey-cancel", Transfer.class);
        StepGate gate = new StepGate(WAIT);
        Saga<Transfer> saga = Saga.on(topic, "okey-cancel-saga").step("hold", step -> gate.pass()).build();
        try (CoopEngine engine = Coop.engine(dataSource).workers(4).register(saga).start()) {
            CoopClient client = engine.client();
            LaunchOptions key = LaunchOptions.none().orderingKey("acct-5");
            MessageId first = client.launch(topic, new Transfer("acct-5", 1), key);
            gate.awaitArrivals(1, WAIT);
            MessageId second = client.launch(topic, new Transfer("acct-5", 2), key);
            MessageId third = client.launch(topic, new Transfer("acct-5", 3), key);
            assertThat(client.cancel(second, "not needed any more")).isEqualTo(CancelResult.REQUESTED);
            assertThat(client.awaitCompletion(second, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(client.statuses(third)).containsExactly(RunStatus.HELD);
            assertThat(gate.arrivals()).isEqualTo(1);
            gate.open();
            assertThat(client.awaitCompletion(first, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.awaitCompletion(third, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(gate.arrivals()).isEqualTo(2);
        } finally {
            gate.open();
        }
    }
    @Test
    void a_launch_with_an_ordering_key_in_a_repeatable_read_transaction_is_refused_with_the_reason(
            DataSource dataSource) throws Exception {
        Topic<Transfer> topic = Topic.of("okey-isolation", Transfer.class);
        Saga<Transfer> saga = Saga.on(topic, "okey-isolation-saga").step("go", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(dataSource).register(saga).start();
                java.sql.Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            c.setTransactionIsolation(java.sql.Connection.TRANSACTION_REPEATABLE_READ);
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> engine.client().launch(c, topic,
                    new Transfer("acct-3", 1), LaunchOptions.none().orderingKey("acct-3")))
                    .isInstanceOf(dev.coop.failure.CoopStoreException.class)
                    .hasMessageContaining("must be launched in a READ COMMITTED transaction, not repeatable read")
                    .hasMessageContaining("ordering key 'acct-3'");
            c.rollback();
            c.setTransactionIsolation(java.sql.Connection.TRANSACTION_READ_COMMITTED);
            MessageId ok = engine.client().launch(c, topic, new Transfer("acct-3", 2),
                    LaunchOptions.none().orderingKey("acct-3"));
            c.commit();
            assertThat(engine.client().awaitCompletion(ok, WAIT)).isEqualTo(Outcome.COMMITTED);
        }
    }
    @Test
    void a_run_launching_into_its_own_saga_and_key_runs_its_child_within_its_turn_and_the_next_run_waits(
            DataSource dataSource) {
        Topic<Transfer> topic = Topic.of("okey-nested", Transfer.class);
        List<String> order = Collections.synchronizedList(new ArrayList<>());
        Saga<Transfer> saga = Saga.on(topic, "okey-nested-saga")
                .step("split", step -> {
                    order.add("start " + step.payload().n());
                    if (step.payload().n() < 10) { // a child of the same saga and key: awaited by this run
                        step.launch(topic, new Transfer(step.payload().account(), step.payload().n() * 10),
                                LaunchOptions.none().orderingKey(step.payload().account()));
                    }
                })
                .step("done", step -> order.add("end " + step.payload().n()))
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).workers(4).register(saga).start()) {
            CoopClient client = engine.client();
            LaunchOptions key = LaunchOptions.none().orderingKey("acct-6");
            MessageId first = client.launch(topic, new Transfer("acct-6", 1), key);
            MessageId second = client.launch(topic, new Transfer("acct-6", 2), key);
            assertThat(client.awaitCompletion(first, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.awaitCompletion(second, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(order).containsExactly("start 1", "start 10", "end 10", "end 1", "start 2", "start 20",
                    "end 20", "end 2");
        }
    }
    @Test
    void a_parent_that_gives_up_settles_its_held_child_and_the_key_goes_on(DataSource dataSource) throws Exception {
        Topic<Transfer> topic = Topic.of("okey-deadline", Transfer.class);
        Topic<Transfer> parentTopic = Topic.of("okey-deadline-parent", Transfer.class);
        StepGate gate = new StepGate(WAIT);
        Saga<Transfer> keyed = Saga.on(topic, "okey-deadline-saga").step("hold", step -> {
            if (step.payload().n() == 1) {
                gate.pass();
            }
        }).build();
        Saga<Transfer> parent = Saga.on(parentTopic, "okey-deadline-parent-saga")
                .step("launch", step -> step.launch(topic, step.payload(),
                        LaunchOptions.none().orderingKey(step.payload().account())))
                .step("after", step -> {
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).workers(4).register(keyed, parent).start()) {
            CoopClient client = engine.client();
            LaunchOptions key = LaunchOptions.none().orderingKey("acct-4");
            MessageId holder = client.launch(topic, new Transfer("acct-4", 1), key);
            gate.awaitArrivals(1, WAIT);
            // the parent's child is held behind the gated run; the parent's deadline passes first
            MessageId waiting = client.launch(parentTopic, new Transfer("acct-4", 2), LaunchOptions.none()
                    .context(CooperationContext.of(Deadlines.HAPPY_PATH,
                            Deadline.at(client.now().plusSeconds(2), "test"))));
            assertThat(client.awaitCompletion(waiting, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            RunView child = client.tree(waiting).runs().get(0).children().get(0);
            assertThat(child.status()).isEqualTo(RunStatus.ROLLED_BACK);
            assertThat(child.startedAt()).isNull();
            MessageId next = client.launch(topic, new Transfer("acct-4", 3), key);
            assertThat(client.statuses(next)).containsExactly(RunStatus.HELD);
            gate.open();
            assertThat(client.awaitCompletion(holder, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.awaitCompletion(next, WAIT)).isEqualTo(Outcome.COMMITTED);
        } finally {
            gate.open();
        }
    }
}
