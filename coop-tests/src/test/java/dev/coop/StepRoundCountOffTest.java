package dev.coop;

import static dev.coop.CountOffRounds.child;
import static dev.coop.CountOffRounds.childrenRound;
import static dev.coop.CountOffRounds.count;
import static dev.coop.CountOffRounds.log;
import static dev.coop.CountOffRounds.outcomes;
import static dev.coop.CountOffRounds.parent;
import static dev.coop.CountOffRounds.parentsWaiting;
import static dev.coop.CountOffRounds.row;
import static dev.coop.CountOffRounds.version;
import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.inspect.Event;
import dev.coop.inspect.EventType;
import dev.coop.inspect.Outcome;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import dev.coop.test.CoopTables;
import dev.coop.test.Invariants;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Children that finish in one round count off at their parents with one statement for the round, one update per
 * parent, leaving what their count-offs one by one would leave. Rounds of 8 are forced as in {@link StepRoundTest}: an
 * engine without the children's saga runs the parents' steps (their children then wait, all due), and the next
 * engine (one worker, at most 8 runs per transaction) has only the children's saga, so its first claim takes the 8
 * children; the parents' next steps run on a third engine, after the round's state was read.
 */
class StepRoundCountOffTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = StepRoundTest.WAIT;

    /** The statement of a single count-off, and of the round's (one update per parent), as the engine prepares them. */
    static final String COUNT_OFF_ONE = "pending_children = p.pending_children - 1";
    static final String COUNT_OFF_ROUND = "pending_children = p.pending_children - c.n";

    /** No statement may take a count below zero (a count-off too many would fail its transaction). */
    @BeforeAll
    static void countsNeverNegative(DataSource dataSource) throws SQLException {
        Coop.engine(dataSource).workers(1).clock(StepRoundTest.CLOCK).register(child("co-schema")).start().close();
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("ALTER TABLE coop.run ADD CONSTRAINT counts_never_negative"
                    + " CHECK (pending_children >= 0 AND failed_children >= 0)");
        }
    }

    @Test
    void eight_children_finishing_in_one_round_count_off_once_each_and_their_parent_goes_on_once(
            DataSource dataSource) throws SQLException {
        Saga<String> child = child("co-one-child");
        Saga<String> parent = parent("co-one-parent", child.topic(), true);
        MessageId id = parentsWaiting(dataSource, child, parent, List.of(parent), List.of("a,b,c,d,e,f,g,h"), 1)
                .get("a,b,c,d,e,f,g,h");
        String before = row(dataSource, id);
        assertThat(before).startsWith("WAITING pending=8 failed=0");
        List<String> sent = childrenRound(dataSource, child, 8);
        assertThat(sent).as("one statement counts the 8 children off").filteredOn(s -> s.contains(COUNT_OFF_ROUND))
                .hasSize(1);
        assertThat(sent).as("no child counts off alone").noneMatch(s -> s.contains(COUNT_OFF_ONE));
        int version = Integer.parseInt(before.replaceAll(".*version=(\\d+).*", "$1"));
        assertThat(row(dataSource, id)).isEqualTo("RUNNABLE pending=0 failed=0 version=" + (version + 8)
                + " finished=false due=true");
        try (CoopEngine engine = Coop.engine(dataSource).workers(1).clock(StepRoundTest.CLOCK).register(parent)
                .register(child).start()) {
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(log(engine.client(), id)).containsExactly("EMITTED null", "SEEN null", "SUSPENDED launch",
                    "SUSPENDED next", "COMMITTED next");
            Invariants.assertAll(engine.client().events(id));
        }
    }

    /**
     * Three parents, children of each finishing in one round, some failing: each parent's count is what the count-offs
     * of its children one by one leave (compared with an engine that runs one run per transaction), and each goes on
     * as it would then: to its rollback, or to its next step.
     */
    @Test
    void children_of_several_parents_some_failing_count_off_in_one_round_as_one_by_one(DataSource dataSource)
            throws SQLException {
        Map<String, String> inRound = severalParents(dataSource, "co-round", 8);
        Map<String, String> alone = severalParents(dataSource, "co-alone", 1);
        assertThat(inRound).isEqualTo(alone);
        assertThat(inRound.get("ok,ok,fail")).startsWith("RUNNABLE pending=0 failed=1").endsWith("ROLLED_BACK");
        assertThat(inRound.get("fail,ok,fail")).startsWith("RUNNABLE pending=0 failed=2").endsWith("ROLLED_BACK");
        assertThat(inRound.get("ok,ok")).startsWith("RUNNABLE pending=0 failed=0").endsWith("COMMITTED");
    }

    /** The scenario of three parents; for each parent, its row after the children's round, its log, its outcome. */
    private Map<String, String> severalParents(DataSource dataSource, String name, int maxRuns) throws SQLException {
        Saga<String> child = child(name + "-child");
        Saga<String> parent = parent(name + "-parent", child.topic(), true);
        List<String> payloads = List.of("ok,ok,fail", "fail,ok,fail", "ok,ok");
        Map<String, MessageId> ids = parentsWaiting(dataSource, child, parent, List.of(parent), payloads, 3);
        Map<String, Integer> versions = new LinkedHashMap<>();
        for (var e : ids.entrySet()) {
            versions.put(e.getKey(), version(row(dataSource, e.getValue())));
        }
        List<String> sent = childrenRound(dataSource, child, maxRuns);
        if (maxRuns > 1) {
            assertThat(sent).filteredOn(s -> s.contains(COUNT_OFF_ROUND)).hasSize(1);
            assertThat(sent).noneMatch(s -> s.contains(COUNT_OFF_ONE));
        }
        return outcomes(dataSource, ids, versions, parent, child);
    }

    /**
     * Children rolled back in one round count off at parents on their rollback path (where only a failed rollback
     * counts as failed) as one by one, and the parents end as they would then.
     */
    @Test
    void children_rolling_back_in_one_round_count_off_at_parents_on_their_rollback_path_as_one_by_one(
            DataSource dataSource) throws SQLException {
        Map<String, String> inRound = rollingBack(dataSource, "co-rb-round", 8);
        Map<String, String> alone = rollingBack(dataSource, "co-rb-alone", 1);
        assertThat(inRound).isEqualTo(alone);
        assertThat(inRound.get("ok,fail,ok,fail")).startsWith("RUNNABLE pending=0 failed=2")
                .endsWith("ROLLBACK_FAILED");
        assertThat(inRound.get("ok,ok,ok,ok")).startsWith("RUNNABLE pending=0 failed=0").endsWith("ROLLED_BACK");
    }

    /**
     * Two parents whose children committed, then whose next step fails: their children roll back (a compensation
     * fails where the payload says so). For each parent: its row after the children's rollbacks, its log, its outcome.
     */
    private Map<String, String> rollingBack(DataSource dataSource, String name, int maxRuns) throws SQLException {
        Saga<String> child = Saga.on(Topic.of(name + "-child", String.class), name + "-child")
                .step("work", step -> {
                })
                .compensateWith((step, cause) -> {
                    if (step.payload().equals("fail")) {
                        throw new IllegalStateException("this compensation fails");
                    }
                })
                .build();
        Saga<String> parent = Saga.on(Topic.of(name + "-parent", String.class), name + "-parent")
                .step("launch", step -> {
                    for (String each : step.payload().split(",")) {
                        step.launch(child.topic(), each);
                    }
                })
                .step("boom", step -> {
                    throw new IllegalStateException("the parent fails after its children committed");
                })
                .build();
        Map<String, MessageId> ids = parentsWaiting(dataSource, child, parent, List.of(parent),
                List.of("ok,fail,ok,fail", "ok,ok,ok,ok"), 2);
        childrenRound(dataSource, child, maxRuns);
        try (CoopEngine engine = Coop.engine(dataSource).workers(1).clock(StepRoundTest.CLOCK).register(parent)
                .start()) {
            Await.until("the parents wait for their children's rollbacks", WAIT, () -> count(dataSource,
                    "SELECT count(*) FROM coop.run WHERE saga = ? AND status = 'WAITING' AND phase = 'ROLLBACK'",
                    parent.name()) == 2);
        }
        Map<String, Integer> versions = new LinkedHashMap<>();
        for (var e : ids.entrySet()) {
            versions.put(e.getKey(), version(row(dataSource, e.getValue())));
        }
        List<String> sent = childrenRound(dataSource, child, maxRuns);
        if (maxRuns > 1) {
            assertThat(sent).anyMatch(s -> s.contains(COUNT_OFF_ROUND));
            assertThat(sent).noneMatch(s -> s.contains(COUNT_OFF_ONE));
        }
        return outcomes(dataSource, ids, versions, parent, child);
    }

    /**
     * A parent whose last step launched the 8 children commits by their count-off in the round (its COMMITTED after
     * every child's end in the log), and is counted off at its own parent in the same transaction.
     */
    @Test
    void a_parent_committed_by_its_childrens_round_is_counted_off_at_its_own_parent(DataSource dataSource)
            throws SQLException {
        Saga<String> child = child("co-cascade-child");
        Saga<String> parent = parent("co-cascade-parent", child.topic(), false);
        Saga<String> root = Saga.on(Topic.of("co-cascade-root", String.class), "co-cascade-root")
                .step("launch", step -> step.launch(parent.topic(), step.payload()))
                .step("after", step -> {
                })
                .build();
        MessageId id = parentsWaiting(dataSource, child, root, List.of(root, parent), List.of("a,b,c,d,e,f,g,h"), 2)
                .get("a,b,c,d,e,f,g,h");
        List<String> sent = childrenRound(dataSource, child, 8);
        assertThat(sent).filteredOn(s -> s.contains(COUNT_OFF_ROUND)).hasSize(1);
        assertThat(sent).as("the cascade, one level").filteredOn(s -> s.contains(COUNT_OFF_ONE)).hasSize(1);
        assertThat(row(dataSource, id)).as("the root, counted off by the cascade")
                .startsWith("RUNNABLE pending=0 failed=0").endsWith("finished=false due=true");
        List<Event> events = CoopTables.of(dataSource).allEvents();
        Event committed = events.stream()
                .filter(e -> parent.name().equals(e.saga()) && e.type() == EventType.COMMITTED).findFirst()
                .orElseThrow();
        List<Event> childrenEnds = events.stream()
                .filter(e -> child.name().equals(e.saga()) && e.type() == EventType.COMMITTED).toList();
        assertThat(childrenEnds).hasSize(8).allMatch(e -> e.id() < committed.id());
        try (CoopEngine engine = Coop.engine(dataSource).workers(1).clock(StepRoundTest.CLOCK).register(root)
                .register(parent).register(child).start()) {
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(log(engine.client(), id)).containsExactly("EMITTED null", "SEEN null", "SUSPENDED launch",
                    "SUSPENDED after", "COMMITTED after");
            Invariants.assertAll(engine.client().events(id));
        }
    }

    /**
     * A parent committed by its children's count-off in a round is a finished run like its children: its message's
     * join membership is settled in the round's transaction.
     */
    @Test
    void a_parent_committed_by_its_childrens_round_settles_its_join_membership(DataSource dataSource) {
        Saga<String> child = child("co-join-child");
        Saga<String> parent = parent("co-join-parent", child.topic(), false);
        MessageId id = parentsWaiting(dataSource, child, parent, List.of(parent), List.of("a,b,c,d,e,f,g,h"), 1)
                .get("a,b,c,d,e,f,g,h");
        CoopClient client = CoopClient.builder(dataSource).clock(StepRoundTest.CLOCK).build();
        dev.coop.join.JoinId join = client.joins().start(dev.coop.join.JoinSpec.expecting(1)
                .onComplete(Topic.of("co-join-done", dev.coop.join.JoinResult.class))
                .onFail(Topic.of("co-join-failed", dev.coop.join.JoinResult.class)));
        assertThat(client.joins().attach(join, id)).isEqualTo(dev.coop.join.AttachResult.ATTACHED);
        List<String> sent = childrenRound(dataSource, child, 8);
        assertThat(sent).filteredOn(s -> s.contains(COUNT_OFF_ROUND)).hasSize(1);
        assertThat(client.statuses(id)).containsOnly(RunStatus.COMMITTED);
        assertThat(client.joins().get(join).status()).isEqualTo(dev.coop.join.JoinStatus.COMPLETED);
        assertThat(client.joins().get(join).members()).extracting(m -> m.state())
                .containsExactly(dev.coop.join.JoinMemberState.COMPLETED);
    }

    /**
     * Two engines whose rounds are open at once (each one's first step waits for the other's), each finishing 8
     * children of the same parent: the second round's count-off waits for the first's commit and counts on the
     * parent as the first left it; every child counts once.
     */
    @Test
    void two_engines_rounds_counting_off_at_the_same_parent_at_once_count_every_child_once(DataSource dataSource)
            throws Exception {
        java.util.concurrent.CountDownLatch bothOpen = new java.util.concurrent.CountDownLatch(2);
        Saga<String> child = Saga.on(Topic.of("co-two-child", String.class), "co-two-child")
                .step("work", step -> {
                    bothOpen.countDown();
                    if (!bothOpen.await(WAIT.toSeconds(), java.util.concurrent.TimeUnit.SECONDS)) {
                        throw new IllegalStateException("the other engine's round did not start");
                    }
                })
                .build();
        Saga<String> parent = parent("co-two-parent", child.topic(), true);
        String sixteen = String.join(",", java.util.Collections.nCopies(16, "ok"));
        MessageId id = parentsWaiting(dataSource, child, parent, List.of(parent), List.of(sixteen), 1).get(sixteen);
        int version = version(row(dataSource, id));
        List<String> sent = new CopyOnWriteArrayList<>();
        StepRoundTest.Rounds rounds = new StepRoundTest.Rounds();
        List<CoopEngine> engines = new java.util.ArrayList<>();
        try {
            for (int i = 0; i < 2; i++) {
                engines.add(Coop.engine(RecordingDataSource.of(dataSource, sent)).workers(1)
                        .maxRunsPerTransaction(8).pollInterval(Duration.ofMillis(100)).clock(StepRoundTest.CLOCK)
                        .listener(rounds).register(child).start());
            }
            Await.until("the children finished", WAIT, () -> count(dataSource,
                    "SELECT count(*) FROM coop.run WHERE saga = ? AND status <> 'COMMITTED'", child.name()) == 0);
        } finally {
            engines.forEach(CoopEngine::close);
        }
        assertThat(rounds.committed).as("two rounds of 8").hasSize(2).allMatch(r -> r[0] == 8 && r[1] == 8);
        assertThat(sent).filteredOn(s -> s.contains(COUNT_OFF_ROUND)).hasSize(2);
        assertThat(row(dataSource, id)).isEqualTo("RUNNABLE pending=0 failed=0 version=" + (version + 16)
                + " finished=false due=true");
        try (CoopEngine engine = Coop.engine(dataSource).workers(1).clock(StepRoundTest.CLOCK).register(parent)
                .register(child).start()) {
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            Invariants.assertAll(engine.client().events(id));
        }
    }

    /** The message whose scope a child of {@link #cancelling} cancels from its step. */
    static final AtomicReference<MessageId> CANCELLED = new AtomicReference<>();

    /** A saga of one step that cancels {@link #CANCELLED}'s scope (its own parent's) when its payload says so. */
    static Saga<String> cancelling(String name, CoopClient client) {
        return Saga.on(Topic.of(name, String.class), name)
                .step("work", step -> {
                    if (step.payload().equals("cancel")) {
                        client.cancel(CANCELLED.get(), "cancelled while its children's round runs");
                    }
                })
                .build();
    }

    /**
     * A child whose scope is cancelled during the round (after its claim, before the round's statement) fails that
     * statement's check, as its own advance would have: the round is rolled back and its runs go alone, where the
     * cancelled scope's runs roll back and the others commit, each counted off once.
     */
    @Test
    void a_child_whose_scope_is_cancelled_during_the_round_aborts_it_and_the_runs_go_alone(DataSource dataSource)
            throws SQLException {
        CoopClient client = CoopClient.builder(dataSource).clock(StepRoundTest.CLOCK).build();
        Saga<String> child = cancelling("co-cancel-child", client);
        Saga<String> parent = parent("co-cancel-parent", child.topic(), true);
        Map<String, MessageId> ids = parentsWaiting(dataSource, child, parent, List.of(parent),
                List.of("ok,ok,ok,ok", "ok,cancel,ok,ok"), 2);
        CANCELLED.set(ids.get("ok,cancel,ok,ok"));
        List<String> sent = new CopyOnWriteArrayList<>();
        StepRoundTest.Rounds rounds = new StepRoundTest.Rounds();
        try (CoopEngine engine = Coop.engine(RecordingDataSource.of(dataSource, sent)).workers(1)
                .maxRunsPerTransaction(8)
                .pollInterval(Duration.ofMillis(100)).clock(StepRoundTest.CLOCK).listener(rounds).register(child)
                .start()) {
            Await.until("the children finished", WAIT, () -> count(dataSource,
                    "SELECT count(*) FROM coop.run WHERE saga = ? AND finished_at IS NULL", child.name()) == 0);
        }
        assertThat(sent).as("the round's statement was sent").anyMatch(s -> s.contains(COUNT_OFF_ROUND));
        assertThat(rounds.committed).as("the round was rolled back").noneMatch(r -> r[1] > 1);
        assertThat(row(dataSource, ids.get("ok,ok,ok,ok"))).startsWith("RUNNABLE pending=0 failed=0");
        assertThat(row(dataSource, ids.get("ok,cancel,ok,ok"))).startsWith("RUNNABLE pending=0 failed=4");
        try (CoopEngine engine = Coop.engine(dataSource).workers(1).clock(StepRoundTest.CLOCK).register(parent)
                .register(child).start()) {
            assertThat(engine.client().awaitCompletion(ids.get("ok,ok,ok,ok"), WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(engine.client().awaitCompletion(ids.get("ok,cancel,ok,ok"), WAIT))
                    .isEqualTo(Outcome.ROLLED_BACK);
        }
        Invariants.assertAll(CoopTables.of(dataSource).allEvents());
    }
}
