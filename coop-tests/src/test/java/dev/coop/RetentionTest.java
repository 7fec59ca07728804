package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.Payloads.Empty;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.Outcome;
import dev.coop.inspect.RunQuery;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Retention: finished hierarchies are deleted whole (messages, events, runs, cancellations), root by root; anything
 * runnable, sleeping, waiting or parked, and anything finished more recently than the age, is kept.
 */
class RetentionTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    static final Topic<Empty> PARENT = Topic.of("retention-parent", Empty.class);
    static final Topic<Empty> CHILD = Topic.of("retention-child", Empty.class);
    static final Topic<Empty> FAILING = Topic.of("retention-failing", Empty.class);
    static final Topic<Empty> SLEEPY = Topic.of("retention-sleepy", Empty.class);

    static final Saga<Empty> PARENT_SAGA = Saga.on(PARENT, "retention-parent-handler")
            .step("fan-out", step -> {
                step.launch(CHILD, new Empty());
                step.launch(CHILD, new Empty());
            })
            .compensateWith((step, cause) -> {
            })
            .step("after", step -> {
            })
            .build();
    static final Saga<Empty> CHILD_SAGA = Saga.on(CHILD, "retention-child-handler").step("work", step -> {
    }).build();
    static final Saga<Empty> FAILING_SAGA = Saga.on(FAILING, "retention-failing-handler")
            .step("launch", step -> step.launch(CHILD, new Empty()))
            .compensateWith((step, cause) -> {
            })
            .step("fail", step -> {
                throw new IllegalStateException("boom");
            })
            .build();
    static final Saga<Empty> SLEEPY_SAGA = Saga.on(SLEEPY, "retention-sleepy-handler")
            .step("before", step -> {
            })
            .sleep("nap", Duration.ofHours(1))
            .step("after", step -> {
            })
            .build();

    private static CoopEngine engine(DataSource dataSource) {
        return Coop.engine(dataSource).pollInterval(Duration.ofMillis(200))
                .register(PARENT_SAGA).register(CHILD_SAGA).register(FAILING_SAGA).register(SLEEPY_SAGA).start();
    }

    @Test
    void finished_hierarchies_are_deleted_whole_and_unfinished_ones_are_kept(DataSource dataSource)
            throws SQLException {
        try (CoopEngine engine = engine(dataSource)) {
            CoopClient client = engine.client();
            MessageId committed = client.launch(PARENT, new Empty());
            MessageId rolledBack = client.launch(FAILING, new Empty());
            MessageId sleeping = client.launch(SLEEPY, new Empty());
            assertThat(client.awaitCompletion(committed, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.awaitCompletion(rolledBack, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            Await.until("the sleepy run sleeps", WAIT,
                    () -> client.tree(sleeping).runs().getFirst().steps().size() == 2);
            MessageId cancelled = client.launch(SLEEPY, new Empty());
            Await.until("the second sleepy run sleeps", WAIT,
                    () -> client.tree(cancelled).runs().getFirst().steps().size() == 2);
            client.cancel(cancelled, "not needed");
            assertThat(client.awaitCompletion(cancelled, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(rows(dataSource, committed)).satisfies(r -> {
                assertThat(r.messages()).isEqualTo(3);
                assertThat(r.runs()).isEqualTo(3);
                assertThat(r.events()).isGreaterThan(3);
            });

            client.recordAudit(rolledBack, null, "rollback", "alice", "entered twice", "REFUSED: rolled back already");

            PruneResult pruned = client.prune(Duration.ZERO);

            assertThat(pruned.dryRun()).isFalse();
            assertThat(pruned.hierarchies()).isGreaterThanOrEqualTo(3);
            for (MessageId gone : List.of(committed, rolledBack, cancelled)) {
                assertThat(rows(dataSource, gone)).isEqualTo(new Rows(0, 0, 0, 0));
                assertThatThrownBy(() -> client.tree(gone)).isInstanceOf(CoopValidationException.class)
                        .hasMessageContaining("No message " + gone);
            }
            assertThat(client.audit(rolledBack)).isEmpty();
            assertThat(rows(dataSource, sleeping).runs()).isEqualTo(1);
            assertThat(client.tree(sleeping).runs().getFirst().status()).isEqualTo(RunStatus.RUNNABLE);
            assertThat(client.runs(RunQuery.newest().saga("retention-sleepy-handler"))).hasSize(1);
        }
    }

    @Test
    void a_dry_run_counts_what_would_go_and_deletes_nothing(DataSource dataSource) throws SQLException {
        try (CoopEngine engine = engine(dataSource)) {
            CoopClient client = engine.client();
            MessageId id = client.launch(PARENT, new Empty());
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            Rows before = rows(dataSource, id);

            PruneResult wouldGo = client.pruneDryRun(Duration.ZERO);

            assertThat(wouldGo.dryRun()).isTrue();
            assertThat(wouldGo.hierarchies()).isGreaterThanOrEqualTo(1);
            assertThat(wouldGo.sample()).isNotEmpty();
            assertThat(rows(dataSource, id)).isEqualTo(before);
        }
    }

    @Test
    void hierarchies_that_finished_within_the_age_are_kept(DataSource dataSource) throws SQLException {
        try (CoopEngine engine = engine(dataSource)) {
            CoopClient client = engine.client();
            MessageId id = client.launch(PARENT, new Empty());
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            Rows before = rows(dataSource, id);

            assertThat(client.pruneDryRun(Duration.ofHours(1)).sample()).doesNotContain(id);
            assertThat(client.prune(Duration.ofHours(1)).sample()).doesNotContain(id);

            assertThat(rows(dataSource, id)).isEqualTo(before);
        }
    }

    @Test
    void a_parent_waiting_for_a_child_nobody_runs_is_kept(DataSource dataSource) throws SQLException {
        Topic<Empty> orphan = Topic.of("retention-orphan", Empty.class);
        Saga<Empty> orphanSaga = Saga.on(orphan, "retention-orphan-handler").step("never", step -> {
        }).build();
        Topic<Empty> waiting = Topic.of("retention-waiting", Empty.class);
        Saga<Empty> waitingSaga = Saga.on(waiting, "retention-waiting-handler")
                .step("launch", step -> step.launch(orphan, new Empty()))
                .build();
        // an engine registers the orphan's saga and stops: its runs are created but nobody runs them
        Coop.engine(dataSource).register(orphanSaga).start().close();
        try (CoopEngine engine = Coop.engine(dataSource).register(waitingSaga).start()) {
            MessageId id = engine.client().launch(waiting, new Empty());
            Await.until("the parent waits", WAIT,
                    () -> engine.client().statuses(id).contains(RunStatus.WAITING));

            engine.client().prune(Duration.ZERO);

            assertThat(rows(dataSource, id).runs()).isEqualTo(2);
        }
    }

    @Test
    void an_engine_with_retention_deletes_finished_hierarchies_by_itself(DataSource dataSource) {
        try (CoopEngine engine = Coop.engine(dataSource).pollInterval(Duration.ofMillis(100))
                .register(PARENT_SAGA).register(CHILD_SAGA).retention(Duration.ofMillis(1)).start()) {
            MessageId id = engine.client().launch(PARENT, new Empty());
            Await.until("the finished hierarchy is deleted", WAIT, () -> {
                try {
                    return rows(dataSource, id).equals(new Rows(0, 0, 0, 0));
                } catch (SQLException e) {
                    throw new IllegalStateException(e);
                }
            });
        }
    }

    @Test
    void clients_pruning_at_once_delete_each_hierarchy_once(DataSource dataSource) throws Exception {
        List<MessageId> ids = new ArrayList<>();
        try (CoopEngine engine = engine(dataSource)) {
            for (int i = 0; i < 30; i++) {
                ids.add(engine.client().launch(PARENT, new Empty()));
            }
            for (MessageId id : ids) {
                assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            }
        }
        ExecutorService pool = Executors.newFixedThreadPool(3);
        try {
            List<Future<PruneResult>> results = new ArrayList<Future<PruneResult>>();
            for (int i = 0; i < 3; i++) {
                results.add(pool.submit(() -> Coop.client(dataSource).prune(Duration.ZERO)));
            }
            long runs = 0;
            for (Future<PruneResult> result : results) {
                runs += result.get().runs();
            }
            for (MessageId id : ids) {
                assertThat(rows(dataSource, id)).isEqualTo(new Rows(0, 0, 0, 0));
            }
            assertThat(runs).isGreaterThanOrEqualTo(30 * 3);
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void ages_out_of_range_are_refused(DataSource dataSource) {
        CoopClient client = Coop.client(dataSource);
        assertThatThrownBy(() -> client.prune(Duration.ofSeconds(-1))).isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("olderThan must be zero or positive, was PT-1S");
        assertThatThrownBy(() -> client.pruneDryRun(null)).isInstanceOf(CoopValidationException.class);
        assertThatThrownBy(() -> client.prune(Duration.ofSeconds(Long.MAX_VALUE)))
                .isInstanceOf(CoopValidationException.class).hasMessageContaining("at most 1000 years");
        assertThatThrownBy(() -> Coop.engine(dataSource).retention(Duration.ZERO))
                .isInstanceOf(CoopValidationException.class)
                .hasMessageContaining("retention must be a positive duration, was PT0S");
    }

    record Rows(long messages, long runs, long events, long cancellations) {
    }

    /** What is left of the hierarchy rooted at {@code root}, read directly from the tables. */
    private static Rows rows(DataSource dataSource, MessageId root) throws SQLException {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement("""
                SELECT (SELECT count(*) FROM coop.message m WHERE m.id = ?
                           OR m.id IN (SELECT message_id FROM coop.run WHERE lineage[1] = ?)),
                       (SELECT count(*) FROM coop.run WHERE lineage[1] = ?),
                       (SELECT count(*) FROM coop.event WHERE lineage[1] = ?),
                       (SELECT count(*) FROM coop.cancellation WHERE lineage[1] = ?)
                """)) {
            for (int i = 1; i <= 5; i++) {
                ps.setObject(i, root.value());
            }
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return new Rows(rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4));
            }
        }
    }
}
