package dev.coop;

import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.Outcome;
import dev.coop.join.AttachResult;
import dev.coop.join.JoinId;
import dev.coop.join.JoinMemberState;
import dev.coop.join.JoinResult;
import dev.coop.join.JoinSpec;
import dev.coop.join.JoinStatus;
import dev.coop.join.JoinView;
import dev.coop.join.Joins;
import dev.coop.join.ReportResult;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.Payloads.Empty;
import dev.coop.Payloads.Order;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import dev.coop.test.StepGate;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Joins: a fan-in for code outside sagas. Each test uses topics and sagas of its own (the database, and so the
 * topology registry, is shared by the tests of this class).
 */
class JoinTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);

    record Batch(String name) {
    }

    /** The outcome topics of one test and a saga recording what arrives on them. */
    static final class Outcomes {
        final Topic<JoinResult> done;
        final Topic<JoinResult> failed;
        final List<JoinResult> completions = new CopyOnWriteArrayList<>();
        final List<JoinResult> failures = new CopyOnWriteArrayList<>();
        final Map<UUID, MessageId> messageOf = new ConcurrentHashMap<>();
        final Saga<JoinResult> onDone;
        final Saga<JoinResult> onFailed;

        Outcomes(String prefix) {
            done = Topic.of(prefix + "-done", JoinResult.class);
            failed = Topic.of(prefix + "-failed", JoinResult.class);
            onDone = Saga.on(done, prefix + "-on-done").step("record", step -> {
                messageOf.put(step.payload().joinId(), step.messageId());
                completions.add(step.payload());
            }).build();
            onFailed = Saga.on(failed, prefix + "-on-failed").step("record", step -> {
                messageOf.put(step.payload().joinId(), step.messageId());
                failures.add(step.payload());
            }).build();
        }

        JoinSpec expecting(int count) {
            return JoinSpec.expecting(count).onComplete(done).onFail(failed);
        }

        JoinResult awaitCompletion() {
            return Await.value("the join's on-complete message", WAIT,
                    () -> completions.isEmpty() ? null : completions.getFirst());
        }

        JoinResult awaitFailure() {
            return Await.value("the join's on-fail message", WAIT,
                    () -> failures.isEmpty() ? null : failures.getFirst());
        }
    }

    static Saga<Order> worker(Topic<Order> topic, String name) {
        return Saga.on(topic, name).step("work", step -> {
            if (step.payload().amount() < 0) {
                throw new IllegalArgumentException("negative amount in order " + step.payload().id());
            }
        }).build();
    }

    @Test
    void a_join_completes_when_every_member_committed_and_publishes_one_message(DataSource dataSource) {
        Outcomes outcomes = new Outcomes("jc");
        Topic<Order> work = Topic.of("jc-work", Order.class);
        Topic<Empty> leaf = Topic.of("jc-leaf", Empty.class);
        // a member whose run waits for a child after its last step: it commits in its child's transaction
        Topic<Order> parentWork = Topic.of("jc-parent-work", Order.class);
        Saga<Order> parent = Saga.on(parentWork, "jc-parent").step("launch", step -> step.launch(leaf, new Empty()))
                .build();
        Saga<Empty> child = Saga.on(leaf, "jc-child").step("leaf", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(dataSource).workers(4)
                .register(worker(work, "jc-worker"), parent, child, outcomes.onDone, outcomes.onFailed).start()) {
            CoopClient client = engine.client();
            Joins joins = client.joins();
            JoinId join = joins.start(outcomes.expecting(3).key("customer-42").metadata(new Batch("june")));
            assertThat(joins.get(join).status()).isEqualTo(JoinStatus.OPEN);
            MessageId first = client.launch(work, new Order("a", 1));
            MessageId second = client.launch(work, new Order("b", 2));
            MessageId third = client.launch(parentWork, new Order("c", 3));
            for (MessageId m : List.of(first, second, third)) {
                assertThat(joins.attach(join, m)).isEqualTo(AttachResult.ATTACHED);
            }

            JoinResult result = outcomes.awaitCompletion();
            assertThat(result.joinId()).isEqualTo(join.value());
            assertThat(result.status()).isEqualTo(JoinStatus.COMPLETED);
            assertThat(result.key()).isEqualTo("customer-42");
            assertThat(result.metadata().get("name").asText()).isEqualTo("june");
            assertThat(result.expected()).isEqualTo(3);
            assertThat(result.attached()).isEqualTo(3);
            assertThat(result.completed()).isEqualTo(3);
            assertThat(result.failed()).isZero();
            assertThat(result.members()).extracting(JoinResult.Member::messageId)
                    .containsExactlyInAnyOrder(first.value(), second.value(), third.value());
            assertThat(result.members()).extracting(JoinResult.Member::state)
                    .containsOnly(JoinMemberState.COMPLETED);
            // it came after every member's whole hierarchy finished
            for (MessageId m : List.of(first, second, third)) {
                assertThat(client.statuses(m)).containsOnly(RunStatus.COMMITTED);
            }

            JoinView view = joins.get(join);
            assertThat(view.status()).isEqualTo(JoinStatus.COMPLETED);
            assertThat(view.completed()).isEqualTo(3);
            assertThat(view.finishedAt()).isNotNull();
            assertThat(view.outcomeMessage()).isEqualTo(outcomes.messageOf.get(join.value()));
            assertThat(view.members()).allSatisfy(m -> {
                assertThat(m.state()).isEqualTo(JoinMemberState.COMPLETED);
                assertThat(m.reported()).isFalse();
                assertThat(m.settledAt()).isNotNull();
            });
            assertThat(client.awaitCompletion(view.outcomeMessage(), WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(messagesOn(dataSource, outcomes.done)).isEqualTo(1);
            assertThat(messagesOn(dataSource, outcomes.failed)).isZero();
            assertThat(joins.byKey("customer-42", 10)).extracting(JoinView::id).containsExactly(join);
        }
    }

    @Test
    void a_failed_member_fails_a_join_that_fails_if_any_failed_once_every_member_finished(DataSource dataSource) {
        Outcomes outcomes = new Outcomes("jf");
        Topic<Order> work = Topic.of("jf-work", Order.class);
        StepGate slow = new StepGate();
        Topic<Order> slowWork = Topic.of("jf-slow-work", Order.class);
        Saga<Order> slowSaga = Saga.on(slowWork, "jf-slow").step("hold", step -> slow.pass()).build();
        try (CoopEngine engine = Coop.engine(dataSource).workers(4)
                .register(worker(work, "jf-worker"), slowSaga, outcomes.onDone, outcomes.onFailed).start()) {
            CoopClient client = engine.client();
            Joins joins = client.joins();
            JoinId join = joins.start(outcomes.expecting(3).failIfAnyFailed());
            MessageId ok = client.launch(work, new Order("ok", 1));
            MessageId bad = client.launch(work, new Order("bad", -1));
            MessageId held = client.launch(slowWork, new Order("held", 1));
            for (MessageId m : List.of(ok, bad, held)) {
                joins.attach(join, m);
            }
            assertThat(client.awaitCompletion(bad, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            slow.awaitArrivals(1, WAIT);
            Await.until("the failed member to be counted", WAIT, () -> joins.get(join).failed() == 1);
            JoinView meanwhile = joins.get(join);
            assertThat(meanwhile.status()).as("a join ends only when every member finished").isEqualTo(JoinStatus.OPEN);
            assertThat(outcomes.failures).isEmpty();

            slow.open();
            JoinResult result = outcomes.awaitFailure();
            assertThat(result.status()).isEqualTo(JoinStatus.FAILED);
            assertThat(result.completed()).isEqualTo(2);
            assertThat(result.failed()).isEqualTo(1);
            assertThat(result.members()).contains(new JoinResult.Member(bad.value(), JoinMemberState.FAILED),
                    new JoinResult.Member(ok.value(), JoinMemberState.COMPLETED),
                    new JoinResult.Member(held.value(), JoinMemberState.COMPLETED));
            assertThat(joins.get(join).status()).isEqualTo(JoinStatus.FAILED);
            assertThat(outcomes.completions).isEmpty();
            assertThat(messagesOn(dataSource, outcomes.failed)).isEqualTo(1);
        }
    }

    @Test
    void without_fail_if_any_failed_a_join_completes_and_counts_the_failures(DataSource dataSource) {
        Outcomes outcomes = new Outcomes("jn");
        Topic<Order> work = Topic.of("jn-work", Order.class);
        try (CoopEngine engine = Coop.engine(dataSource)
                .register(worker(work, "jn-worker"), outcomes.onDone, outcomes.onFailed).start()) {
            CoopClient client = engine.client();
            Joins joins = client.joins();
            JoinId join = joins.start(outcomes.expecting(2));
            MessageId ok = client.launch(work, new Order("ok", 1));
            MessageId bad = client.launch(work, new Order("bad", -1));
            joins.attach(join, ok);
            joins.attach(join, bad);

            JoinResult result = outcomes.awaitCompletion();
            assertThat(result.status()).isEqualTo(JoinStatus.COMPLETED);
            assertThat(result.completed()).isEqualTo(1);
            assertThat(result.failed()).isEqualTo(1);
            assertThat(result.members()).containsExactlyInAnyOrder(
                    new JoinResult.Member(ok.value(), JoinMemberState.COMPLETED),
                    new JoinResult.Member(bad.value(), JoinMemberState.FAILED));
            assertThat(outcomes.failures).isEmpty();
        }
    }

    @Test
    void a_join_times_out_publishes_on_fail_once_and_keeps_counting_late_members(DataSource dataSource) {
        Outcomes outcomes = new Outcomes("jt");
        StepGate late = new StepGate();
        Topic<Order> work = Topic.of("jt-work", Order.class);
        Saga<Order> lateSaga = Saga.on(work, "jt-late").step("hold", step -> late.pass()).build();
        try (CoopEngine engine = Coop.engine(dataSource)
                .register(lateSaga, outcomes.onDone, outcomes.onFailed).start()) {
            CoopClient client = engine.client();
            Joins joins = client.joins();
            JoinId join = joins.start(outcomes.expecting(2).timeout(Duration.ofSeconds(1)));
            MessageId member = client.launch(work, new Order("late", 1));
            joins.attach(join, member);
            late.awaitArrivals(1, WAIT);

            JoinResult result = outcomes.awaitFailure();
            assertThat(result.status()).isEqualTo(JoinStatus.TIMED_OUT);
            assertThat(result.attached()).isEqualTo(1);
            assertThat(result.completed()).isZero();
            assertThat(result.members()).containsExactly(
                    new JoinResult.Member(member.value(), JoinMemberState.PENDING));
            JoinView view = joins.get(join);
            assertThat(view.status()).isEqualTo(JoinStatus.TIMED_OUT);
            assertThat(Duration.between(view.createdAt(), view.finishedAt()))
                    .as("timed out by the database's clock, not before the timeout")
                    .isGreaterThanOrEqualTo(Duration.ofSeconds(1));
            assertThat(view.timeoutAt()).isNotNull();

            assertThatThrownBy(() -> joins.attach(join, client.launch(work, new Order("too-late", 1))))
                    .isInstanceOf(CoopValidationException.class)
                    .hasMessageContaining("already ended (TIMED_OUT)");

            late.open(); // the member finishes after the timeout: counted, nothing published again
            Await.until("the late member to be counted", WAIT, () -> joins.get(join).completed() == 1);
            assertThat(joins.get(join).status()).isEqualTo(JoinStatus.TIMED_OUT);
            assertThat(messagesOn(dataSource, outcomes.failed)).isEqualTo(1);
            assertThat(messagesOn(dataSource, outcomes.done)).isZero();
        }
    }

    @Test
    void a_join_started_in_another_process_wakes_an_idle_engines_timer_by_notification(DataSource dataSource)
            throws Exception {
        Outcomes outcomes = new Outcomes("jtn");
        // the engine never polls within this test: only the notification of the new join can wake its timer
        try (CoopEngine engine = Coop.engine(dataSource).pollInterval(Duration.ofSeconds(60))
                .register(outcomes.onDone, outcomes.onFailed).start()) {
            Await.until("the engine's listener", WAIT, () -> listening(dataSource));
            UUID join = UUID.randomUUID();
            try (Connection c = dataSource.getConnection();
                    PreparedStatement ps = c.prepareStatement("""
                            INSERT INTO coop.join_group (id, expected, fail_if_any_failed, on_complete_topic,
                                                         on_fail_topic, timeout_at)
                            VALUES (?, 1, false, ?, ?, clock_timestamp() + interval '300 milliseconds')""")) {
                // written as another process would: no client of this JVM hints the timer
                ps.setObject(1, join);
                ps.setString(2, outcomes.done.name());
                ps.setString(3, outcomes.failed.name());
                ps.executeUpdate();
            }
            JoinResult result = outcomes.awaitFailure();
            assertThat(result.joinId()).isEqualTo(join);
            assertThat(result.status()).isEqualTo(JoinStatus.TIMED_OUT);
        }
    }

    private static boolean listening(DataSource dataSource) {
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN coop_%'");
                java.sql.ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getInt(1) > 0;
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void several_engines_time_a_join_out_once(DataSource dataSource) {
        Outcomes outcomes = new Outcomes("jte");
        List<CoopEngine> engines = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                engines.add(Coop.engine(dataSource).name("jte-" + i).workers(1).pollInterval(Duration.ofMillis(20))
                        .register(outcomes.onDone, outcomes.onFailed).start());
            }
            Joins joins = Coop.client(dataSource).joins();
            List<JoinId> started = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                started.add(joins.start(outcomes.expecting(1).timeout(Duration.ofMillis(50 + 10 * i))));
            }
            Await.until("every join to time out", WAIT, () -> outcomes.failures.size() >= started.size());
            for (JoinId join : started) {
                assertThat(joins.get(join).status()).isEqualTo(JoinStatus.TIMED_OUT);
            }
            assertThat(messagesOn(dataSource, outcomes.failed)).isEqualTo(started.size());
            assertThat(outcomes.failures).extracting(JoinResult::joinId).doesNotHaveDuplicates();
        } finally {
            engines.forEach(CoopEngine::close);
        }
        assertThat(Thread.getAllStackTraces().keySet()).extracting(Thread::getName)
                .as("closed engines stop their join timers")
                .noneMatch(n -> n.contains("jte-") && n.endsWith("join-timer"));
    }

    @Test
    void attach_and_report_are_idempotent(DataSource dataSource) {
        Outcomes outcomes = new Outcomes("ji");
        try (CoopEngine engine = Coop.engine(dataSource).register(outcomes.onDone, outcomes.onFailed).start()) {
            Joins joins = engine.client().joins();
            JoinId join = joins.start(outcomes.expecting(2));
            // members handled outside Coop: any id, settled by reports
            MessageId external = new MessageId(UUID.randomUUID());
            MessageId other = new MessageId(UUID.randomUUID());
            assertThat(joins.attach(join, external)).isEqualTo(AttachResult.ATTACHED);
            assertThat(joins.attach(join, external)).isEqualTo(AttachResult.ALREADY_ATTACHED);
            assertThat(joins.get(join).attached()).isEqualTo(1);
            assertThat(joins.get(join).members()).singleElement()
                    .satisfies(m -> assertThat(m.state()).isEqualTo(JoinMemberState.PENDING));

            assertThat(joins.reportCompleted(join, external)).isEqualTo(ReportResult.RECORDED);
            assertThat(joins.reportCompleted(join, external)).isEqualTo(ReportResult.ALREADY_SETTLED);
            assertThat(joins.reportFailed(join, external)).isEqualTo(ReportResult.ALREADY_SETTLED);
            JoinView view = joins.get(join);
            assertThat(view.completed()).isEqualTo(1);
            assertThat(view.failed()).isZero();
            assertThat(view.status()).isEqualTo(JoinStatus.OPEN);
            assertThat(view.members()).singleElement().satisfies(m -> {
                assertThat(m.state()).isEqualTo(JoinMemberState.COMPLETED);
                assertThat(m.reported()).isTrue();
            });

            joins.attach(join, other);
            assertThat(joins.reportFailed(join, other)).isEqualTo(ReportResult.RECORDED);
            JoinResult result = outcomes.awaitCompletion();
            assertThat(result.completed()).isEqualTo(1);
            assertThat(result.failed()).isEqualTo(1);
            assertThat(joins.reportFailed(join, other)).isEqualTo(ReportResult.ALREADY_SETTLED);
            assertThat(joins.attach(join, other)).as("attaching a member again stays idempotent after the end")
                    .isEqualTo(AttachResult.ALREADY_ATTACHED);
            JoinView ended = joins.get(join);
            assertThat(ended.status()).isEqualTo(JoinStatus.COMPLETED);
            assertThat(ended.completed()).isEqualTo(1);
            assertThat(ended.failed()).isEqualTo(1);
            assertThat(messagesOn(dataSource, outcomes.done)).isEqualTo(1);
        }
    }

    @Test
    void a_message_may_belong_to_several_joins(DataSource dataSource) {
        Outcomes outcomes = new Outcomes("jm");
        Topic<Order> work = Topic.of("jm-work", Order.class);
        StepGate gate = new StepGate();
        Saga<Order> held = Saga.on(work, "jm-worker").step("hold", step -> gate.pass()).build();
        try (CoopEngine engine = Coop.engine(dataSource).register(held, outcomes.onDone, outcomes.onFailed).start()) {
            CoopClient client = engine.client();
            Joins joins = client.joins();
            JoinId small = joins.start(outcomes.expecting(1).key("jm"));
            JoinId large = joins.start(outcomes.expecting(2).key("jm"));
            MessageId shared = client.launch(work, new Order("shared", 1));
            MessageId externalWork = new MessageId(UUID.randomUUID());
            joins.attach(small, shared);
            joins.attach(large, shared);
            joins.attach(large, externalWork);
            joins.reportCompleted(large, externalWork);
            gate.open();

            Await.until("both joins to complete", WAIT, () -> outcomes.completions.size() == 2);
            assertThat(outcomes.completions).extracting(JoinResult::joinId)
                    .containsExactlyInAnyOrder(small.value(), large.value());
            assertThat(joins.get(small).completed()).isEqualTo(1);
            assertThat(joins.get(large).completed()).isEqualTo(2);
            assertThat(joins.byKey("jm", 10)).extracting(JoinView::id).containsExactly(large, small);
        }
    }

    @Test
    void a_message_that_finished_before_it_was_attached_is_settled_at_attach(DataSource dataSource) {
        Outcomes outcomes = new Outcomes("ja");
        Topic<Order> work = Topic.of("ja-work", Order.class);
        Topic<Order> nobody = Topic.of("ja-unhandled", Order.class); // no saga registered
        try (CoopEngine engine = Coop.engine(dataSource)
                .register(worker(work, "ja-worker"), outcomes.onDone, outcomes.onFailed).start()) {
            CoopClient client = engine.client();
            Joins joins = client.joins();
            MessageId done = client.launch(work, new Order("done", 1));
            MessageId failed = client.launch(work, new Order("failed", -1));
            MessageId unhandled = client.launch(nobody, new Order("unhandled", 1));
            assertThat(client.awaitCompletion(done, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.awaitCompletion(failed, WAIT)).isEqualTo(Outcome.ROLLED_BACK);

            JoinId join = joins.start(outcomes.expecting(3));
            joins.attach(join, done);
            joins.attach(join, failed);
            assertThat(joins.get(join).completed()).isEqualTo(1);
            assertThat(joins.get(join).failed()).isEqualTo(1);
            joins.attach(join, unhandled);

            JoinResult result = outcomes.awaitCompletion();
            assertThat(result.members()).containsExactly(
                    new JoinResult.Member(done.value(), JoinMemberState.COMPLETED),
                    new JoinResult.Member(failed.value(), JoinMemberState.FAILED),
                    new JoinResult.Member(unhandled.value(), JoinMemberState.COMPLETED));
        }
    }

    @Test
    void start_and_attach_commit_or_roll_back_with_the_callers_transaction(DataSource dataSource)
            throws SQLException {
        Outcomes outcomes = new Outcomes("jx");
        Topic<Order> work = Topic.of("jx-work", Order.class);
        try (CoopEngine engine = Coop.engine(dataSource)
                .register(worker(work, "jx-worker"), outcomes.onDone, outcomes.onFailed).start()) {
            CoopClient client = engine.client();
            Joins joins = client.joins();
            JoinId rolledBack;
            try (Connection c = dataSource.getConnection()) {
                c.setAutoCommit(false);
                rolledBack = joins.start(c, outcomes.expecting(1));
                joins.attach(c, rolledBack, client.launch(c, work, new Order("x", 1)));
                c.rollback();
                c.setAutoCommit(true);
            }
            assertThatThrownBy(() -> joins.get(rolledBack)).isInstanceOf(CoopValidationException.class)
                    .hasMessageContaining("No join " + rolledBack);

            JoinId committed;
            MessageId member;
            try (Connection c = dataSource.getConnection()) {
                c.setAutoCommit(false);
                committed = joins.start(c, outcomes.expecting(1));
                member = client.launch(c, work, new Order("y", 1));
                assertThat(joins.attach(c, committed, member)).isEqualTo(AttachResult.ATTACHED);
                c.commit();
                c.setAutoCommit(true);
            }
            JoinResult result = outcomes.awaitCompletion();
            assertThat(result.joinId()).isEqualTo(committed.value());
            assertThat(result.members()).containsExactly(
                    new JoinResult.Member(member.value(), JoinMemberState.COMPLETED));

            // reports in the caller's transaction, on a connection in auto-commit mode
            JoinId reported = joins.start(outcomes.expecting(1));
            MessageId external = new MessageId(UUID.randomUUID());
            try (Connection c = dataSource.getConnection()) {
                joins.attach(c, reported, external);
                assertThat(joins.reportCompleted(c, reported, external)).isEqualTo(ReportResult.RECORDED);
                assertThat(c.getAutoCommit()).isTrue();
            }
            assertThat(joins.get(reported).status()).isEqualTo(JoinStatus.COMPLETED);
        }
    }

    /**
     * Two runs of one message (two sagas on its topic) finish in two transactions at once. Each transaction finishes
     * its own run, then waits for the member's row lock, held here by the test, so that both finished their runs
     * before either looks whether the message finished. Released, the first to get the lock sees the other's run
     * unfinished (not committed) and leaves the member pending; the second must then see the first one's commit.
     */
    @Test
    void two_runs_of_a_member_finishing_at_once_count_the_member_once(DataSource dataSource) throws SQLException {
        Outcomes outcomes = new Outcomes("jr");
        Topic<Order> work = Topic.of("jr-work", Order.class);
        StepGate gate = new StepGate();
        Saga<Order> a = Saga.on(work, "jr-a").step("work", step -> gate.pass()).build();
        Saga<Order> b = Saga.on(work, "jr-b").step("work", step -> gate.pass()).build();
        try (CoopEngine engine = Coop.engine(dataSource).workers(4).register(a, b, outcomes.onDone, outcomes.onFailed)
                .start()) {
            CoopClient client = engine.client();
            Joins joins = client.joins();
            JoinId join = joins.start(outcomes.expecting(1));
            MessageId member;
            try (Connection lock = dataSource.getConnection()) {
                lock.setAutoCommit(false);
                try (Connection c = dataSource.getConnection()) {
                    c.setAutoCommit(false);
                    member = client.launch(c, work, new Order("both", 1));
                    joins.attach(c, join, member);
                    c.commit();
                    c.setAutoCommit(true);
                }
                gate.awaitArrivals(2, WAIT);
                try (PreparedStatement ps = lock.prepareStatement(
                        "SELECT 1 FROM coop.join_member WHERE join_id = ? FOR UPDATE")) {
                    ps.setObject(1, join.value());
                    ps.executeQuery().close();
                }
                gate.open();
                Await.until("both runs' transactions to wait for the member lock", WAIT,
                        () -> waitingForLocks(dataSource) == 2);
                lock.commit();
            }
            JoinResult result = outcomes.awaitCompletion();
            assertThat(result.completed()).isEqualTo(1);
            assertThat(client.statuses(member)).containsExactly(RunStatus.COMMITTED, RunStatus.COMMITTED);
            assertThat(joins.get(join).members()).singleElement()
                    .satisfies(m -> assertThat(m.state()).isEqualTo(JoinMemberState.COMPLETED));
        }
    }

    /**
     * A member attached in a transaction that is still open while the message's last run finishes: attach does not
     * wait for the running step, and the finishing transaction waits for the attach to commit, then counts the
     * member (without that, it would look for members before the attach committed, and the attach would have seen
     * the run unfinished: the member would stay pending forever).
     */
    @Test
    void a_run_finishing_while_its_attach_is_uncommitted_counts_the_member(DataSource dataSource)
            throws SQLException {
        Outcomes outcomes = new Outcomes("jw");
        Topic<Order> work = Topic.of("jw-work", Order.class);
        StepGate gate = new StepGate();
        Saga<Order> held = Saga.on(work, "jw-worker").step("hold", step -> gate.pass()).build();
        try (CoopEngine engine = Coop.engine(dataSource).register(held, outcomes.onDone, outcomes.onFailed).start()) {
            CoopClient client = engine.client();
            Joins joins = client.joins();
            JoinId join = joins.start(outcomes.expecting(1));
            MessageId member = client.launch(work, new Order("m", 1));
            gate.awaitArrivals(1, WAIT);
            try (Connection c = dataSource.getConnection()) {
                c.setAutoCommit(false);
                assertThat(joins.attach(c, join, member)).isEqualTo(AttachResult.ATTACHED);
                gate.open();
                Await.until("the finishing transaction to wait for the attach", WAIT,
                        () -> waitingForLocks(dataSource) == 1);
                assertThat(client.statuses(member)).as("not committed yet").containsExactly(RunStatus.RUNNABLE);
                c.commit();
                c.setAutoCommit(true);
            }
            JoinResult result = outcomes.awaitCompletion();
            assertThat(result.members()).containsExactly(
                    new JoinResult.Member(member.value(), JoinMemberState.COMPLETED));
        }
    }

    @Test
    void bad_input_is_refused_naming_the_value(DataSource dataSource) {
        Topic<JoinResult> topic = Topic.of("jb-done", JoinResult.class);
        assertThatThrownBy(() -> JoinSpec.expecting(0)).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("expected count must be between 1 and 10000, was 0");
        assertThatThrownBy(() -> JoinSpec.expecting(10_001)).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("was 10001");
        assertThatThrownBy(() -> JoinSpec.expecting(1).key("")).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("key must be 1 to 255 characters");
        assertThatThrownBy(() -> JoinSpec.expecting(1).key("k".repeat(256)))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("was 256 characters");
        assertThatThrownBy(() -> JoinSpec.expecting(1).onComplete(null)).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("on-complete topic is missing");
        assertThatThrownBy(() -> JoinSpec.expecting(1).onFail(null)).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("on-fail topic is missing");
        assertThatThrownBy(() -> JoinSpec.expecting(1).timeout(Duration.ZERO))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("timeout must be at least 1 ms")
                .hasMessageContaining("was PT0S");
        assertThatThrownBy(() -> JoinSpec.expecting(1).timeout(Duration.ofSeconds(-1)))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("was PT-1S");

        Joins joins = Coop.client(dataSource).joins();
        assertThatThrownBy(() -> joins.start(JoinSpec.expecting(1).onFail(topic)))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("needs an on-complete topic");
        assertThatThrownBy(() -> joins.start(JoinSpec.expecting(1).onComplete(topic)))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("needs an on-fail topic");
        assertThatThrownBy(() -> joins.start(JoinSpec.expecting(1).onComplete(topic).onFail(topic)
                .metadata(new Object()))).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("metadata of type java.lang.Object cannot be serialized");
        assertThatThrownBy(() -> joins.start(JoinSpec.expecting(1).onComplete(topic).onFail(topic)
                .metadata(Map.of("blob", "x".repeat(70_000))))).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("over the limit of 65536 bytes");

        JoinId unknown = new JoinId(UUID.randomUUID());
        MessageId someMessage = new MessageId(UUID.randomUUID());
        assertThatThrownBy(() -> joins.attach(unknown, someMessage)).isInstanceOf(CoopValidationException.class)
                .hasMessage("No join " + unknown + " in schema 'coop'");
        assertThatThrownBy(() -> joins.get(unknown)).isInstanceOf(CoopValidationException.class)
                .hasMessage("No join " + unknown + " in schema 'coop'");
        assertThatThrownBy(() -> joins.reportCompleted(unknown, someMessage))
                .isInstanceOf(CoopValidationException.class).hasMessage("No join " + unknown + " in schema 'coop'");
        assertThatThrownBy(() -> joins.attach(null, someMessage)).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("join id is required");
        assertThatThrownBy(() -> JoinId.parse("not-a-uuid")).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("'not-a-uuid'");

        JoinId join = joins.start(JoinSpec.expecting(1).onComplete(topic).onFail(topic));
        assertThatThrownBy(() -> joins.reportFailed(join, someMessage)).isInstanceOf(CoopValidationException.class)
                .hasMessage("Message " + someMessage + " is not a member of join " + join + "; attach it first");
        joins.attach(join, someMessage);
        MessageId extra = new MessageId(UUID.randomUUID());
        assertThatThrownBy(() -> joins.attach(join, extra)).isInstanceOf(CoopValidationException.class)
                .hasMessage("Cannot attach message " + extra + " to join " + join
                        + ": it already has its 1 expected member(s)");
        joins.reportCompleted(join, someMessage);
        assertThatThrownBy(() -> joins.attach(join, extra)).isInstanceOf(CoopValidationException.class)
                .hasMessage("Cannot attach message " + extra + " to join " + join
                        + ": the join already ended (COMPLETED)");
        assertThatThrownBy(() -> joins.byKey("x", 0)).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("limit must be between 1 and 1000, was 0");
    }

    static int messagesOn(DataSource dataSource, Topic<?> topic) {
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM coop.message WHERE topic = ?")) {
            ps.setString(1, topic.name());
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        } catch (SQLException e) {
            throw new AssertionError(e);
        }
    }

    /** Sessions of this database whose lookup of join members after finishing runs waits for a lock. */
    static int waitingForLocks(DataSource dataSource) {
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM pg_stat_activity"
                        + " WHERE datname = current_database() AND wait_event_type = 'Lock'"
                        + " AND query LIKE '%pending_members%'")) { // the lookup, or the check before COMMIT
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        } catch (SQLException e) {
            throw new AssertionError(e);
        }
    }
}
