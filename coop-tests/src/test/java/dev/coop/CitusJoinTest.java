package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.JoinTest.Outcomes;
import dev.coop.Payloads.Empty;
import dev.coop.Payloads.Order;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.Outcome;
import dev.coop.join.AttachResult;
import dev.coop.join.JoinId;
import dev.coop.join.JoinMemberState;
import dev.coop.join.JoinResult;
import dev.coop.join.JoinStatus;
import dev.coop.join.JoinView;
import dev.coop.join.Joins;
import dev.coop.join.ReportResult;
import dev.coop.test.Await;
import dev.coop.test.CitusDatabase;
import dev.coop.test.StepGate;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Joins on a three-node Citus cluster (the key assertions of {@code JoinTest}). A join's tables ({@code join_group},
 * {@code join_member}) are local to the coordinator, while its members' runs are on their hierarchies' shards: a
 * member that finishes settles its membership on the coordinator in the same distributed transaction. The outcome
 * message is launched as a hierarchy of its own (on its own shard).
 */
class CitusJoinTest {
    @RegisterExtension
    static final CitusDatabase db = new CitusDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    @BeforeAll
    static void migrate() {
        Coop.client(db.dataSource()); // migrations and the Citus layout
    }

    static CoopEngine.Builder engine() {
        return CitusHappyPathTest.engine(db.dataSource());
    }

    @Test
    void a_join_completes_when_every_member_committed_and_publishes_one_message() {
        Outcomes outcomes = new Outcomes("citus-jc");
        Topic<Order> work = Topic.of("citus-jc-work", Order.class);
        Topic<Empty> leaf = Topic.of("citus-jc-leaf", Empty.class);
        Topic<Order> parentWork = Topic.of("citus-jc-parent-work", Order.class); // commits in its child's tx
        Saga<Order> parent = Saga.on(parentWork, "citus-jc-parent")
                .step("launch", step -> step.launch(leaf, new Empty())).build();
        Saga<Empty> child = Saga.on(leaf, "citus-jc-child").step("leaf", step -> {
        }).build();
        try (CoopEngine engine = engine().workers(4).register(JoinTest.worker(work, "citus-jc-worker"), parent,
                child, outcomes.onDone, outcomes.onFailed).start()) {
            CoopClient client = engine.client();
            Joins joins = client.joins();
            JoinId join = joins.start(outcomes.expecting(3).key("citus-customer-42"));
            MessageId first = client.launch(work, new Order("a", 1));
            MessageId second = client.launch(work, new Order("b", 2));
            MessageId third = client.launch(parentWork, new Order("c", 3));
            for (MessageId m : List.of(first, second, third)) {
                assertThat(joins.attach(join, m)).isEqualTo(AttachResult.ATTACHED);
            }
            JoinResult result = outcomes.awaitCompletion();
            assertThat(result.status()).isEqualTo(JoinStatus.COMPLETED);
            assertThat(result.completed()).isEqualTo(3);
            assertThat(result.members()).extracting(JoinResult.Member::messageId)
                    .containsExactlyInAnyOrder(first.value(), second.value(), third.value());
            for (MessageId m : List.of(first, second, third)) {
                assertThat(client.statuses(m)).containsOnly(RunStatus.COMMITTED);
            }
            JoinView view = joins.get(join);
            assertThat(view.status()).isEqualTo(JoinStatus.COMPLETED);
            assertThat(view.members()).allSatisfy(m -> assertThat(m.state()).isEqualTo(JoinMemberState.COMPLETED));
            assertThat(view.outcomeMessage()).isEqualTo(outcomes.messageOf.get(join.value()));
            assertThat(client.awaitCompletion(view.outcomeMessage(), WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(JoinTest.messagesOn(db.dataSource(), outcomes.done)).isEqualTo(1);
            assertThat(joins.byKey("citus-customer-42", 10)).extracting(JoinView::id).containsExactly(join);
        }
    }

    @Test
    void a_failed_member_fails_a_join_that_fails_if_any_failed_once_every_member_finished() {
        Outcomes outcomes = new Outcomes("citus-jf");
        Topic<Order> work = Topic.of("citus-jf-work", Order.class);
        StepGate slow = new StepGate();
        Topic<Order> slowWork = Topic.of("citus-jf-slow-work", Order.class);
        Saga<Order> slowSaga = Saga.on(slowWork, "citus-jf-slow").step("hold", step -> slow.pass()).build();
        try (CoopEngine engine = engine().workers(4).register(JoinTest.worker(work, "citus-jf-worker"), slowSaga,
                outcomes.onDone, outcomes.onFailed).start()) {
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
            assertThat(joins.get(join).status()).isEqualTo(JoinStatus.OPEN);
            slow.open();
            JoinResult result = outcomes.awaitFailure();
            assertThat(result.status()).isEqualTo(JoinStatus.FAILED);
            assertThat(result.completed()).isEqualTo(2);
            assertThat(result.members()).contains(new JoinResult.Member(bad.value(), JoinMemberState.FAILED));
            assertThat(outcomes.completions).isEmpty();
        }
    }

    @Test
    void a_join_times_out_once_and_keeps_counting_a_late_member() {
        Outcomes outcomes = new Outcomes("citus-jt");
        StepGate late = new StepGate();
        Topic<Order> work = Topic.of("citus-jt-work", Order.class);
        Saga<Order> lateSaga = Saga.on(work, "citus-jt-late").step("hold", step -> late.pass()).build();
        try (CoopEngine engine = engine().register(lateSaga, outcomes.onDone, outcomes.onFailed).start()) {
            CoopClient client = engine.client();
            Joins joins = client.joins();
            JoinId join = joins.start(outcomes.expecting(2).timeout(Duration.ofSeconds(1)));
            MessageId member = client.launch(work, new Order("late", 1));
            joins.attach(join, member);
            late.awaitArrivals(1, WAIT);
            JoinResult result = outcomes.awaitFailure();
            assertThat(result.status()).isEqualTo(JoinStatus.TIMED_OUT);
            assertThat(result.members()).containsExactly(
                    new JoinResult.Member(member.value(), JoinMemberState.PENDING));
            assertThatThrownBy(() -> joins.attach(join, client.launch(work, new Order("too-late", 1))))
                    .isInstanceOf(CoopValidationException.class).hasMessageContaining("already ended (TIMED_OUT)");
            late.open();
            Await.until("the late member to be counted", WAIT, () -> joins.get(join).completed() == 1);
            assertThat(joins.get(join).status()).isEqualTo(JoinStatus.TIMED_OUT);
            assertThat(JoinTest.messagesOn(db.dataSource(), outcomes.failed)).isEqualTo(1);
        }
    }

    @Test
    void a_message_that_finished_before_it_was_attached_is_settled_at_attach() {
        Outcomes outcomes = new Outcomes("citus-ja");
        Topic<Order> work = Topic.of("citus-ja-work", Order.class);
        try (CoopEngine engine = engine().register(JoinTest.worker(work, "citus-ja-worker"), outcomes.onDone,
                outcomes.onFailed).start()) {
            CoopClient client = engine.client();
            Joins joins = client.joins();
            MessageId done = client.launch(work, new Order("done", 1));
            MessageId failed = client.launch(work, new Order("failed", -1));
            assertThat(client.awaitCompletion(done, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.awaitCompletion(failed, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            JoinId join = joins.start(outcomes.expecting(2));
            joins.attach(join, done);
            joins.attach(join, failed);
            JoinResult result = outcomes.awaitCompletion();
            assertThat(result.members()).containsExactly(
                    new JoinResult.Member(done.value(), JoinMemberState.COMPLETED),
                    new JoinResult.Member(failed.value(), JoinMemberState.FAILED));
        }
    }

    /**
     * The joins' tables are Citus local tables (with no foreign key between them), so a transaction that writes one of
     * them and a hierarchy's worker commits in two phases, one worker prepared: a member's last step, which settles
     * its membership, and a report that ends the join and launches its outcome (a hierarchy of its own). A crash of
     * the coordinator cannot keep the member's commit without its settlement.
     */
    @Test
    void a_settlement_and_an_outcome_commit_atomically_with_their_worker() throws Exception {
        Outcomes outcomes = new Outcomes("citus-j2pc");
        StepGate gate = new StepGate();
        Topic<Order> work = Topic.of("citus-j2pc-work", Order.class);
        Saga<Order> saga = Saga.on(work, "citus-j2pc-worker").step("hold", step -> gate.pass()).build();
        try (CoopEngine engine = engine().register(saga, outcomes.onDone, outcomes.onFailed).start();
                TwoPhaseCommits.Held held = TwoPhaseCommits.held(db)) {
            CoopClient client = engine.client();
            Joins joins = client.joins();
            JoinId join = joins.start(outcomes.expecting(2));
            MessageId member = client.launch(work, new Order("m", 1));
            MessageId outside = new MessageId(UUID.randomUUID()); // work done outside Coop, settled by a report
            joins.attach(join, member);
            joins.attach(join, outside);
            gate.awaitArrivals(1, WAIT);
            long before = TwoPhaseCommits.count(db);
            gate.open();
            assertThat(client.awaitCompletion(member, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(joins.get(join).completed()).as("settled in the member's last step").isEqualTo(1);
            long settled = TwoPhaseCommits.count(db);
            assertThat(joins.reportCompleted(join, outside)).isEqualTo(ReportResult.RECORDED);
            long reported = TwoPhaseCommits.count(db);
            assertThat(outcomes.awaitCompletion().completed()).isEqualTo(2);
            System.out.println("2PC rows of a member's last step settling it: " + (settled - before)
                    + ", of a report ending the join: " + (reported - settled));
            assertThat(settled - before).as("two-phase commits of the member's last step").isEqualTo(1);
            assertThat(reported - settled).as("two-phase commits of the report and its outcome").isEqualTo(1);
            assertThat(CitusLayoutTest.strings(db.dataSource(), "SELECT conname FROM pg_constraint"
                    + " WHERE conrelid = 'coop.join_member'::regclass AND contype = 'f'")).isEmpty();
        }
    }
}
