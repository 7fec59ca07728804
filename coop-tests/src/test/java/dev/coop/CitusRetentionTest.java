package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.Payloads.Empty;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.Outcome;
import dev.coop.test.Await;
import dev.coop.test.CitusDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Retention on a three-node Citus cluster with hierarchies the engines ran (the key assertions of
 * {@code RetentionTest}; {@code CitusOperatorsTest} prunes states written with SQL): finished hierarchies, with their
 * children, are deleted whole from their shards; a sleeping one is kept; a dry run deletes nothing; an engine with
 * retention prunes by itself.
 */
class CitusRetentionTest {
    @RegisterExtension
    static final CitusDatabase db = new CitusDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);
    static final Topic<Empty> PARENT = Topic.of("citus-retention-parent", Empty.class);
    static final Topic<Empty> CHILD = Topic.of("citus-retention-child", Empty.class);
    static final Topic<Empty> FAILING = Topic.of("citus-retention-failing", Empty.class);
    static final Topic<Empty> SLEEPY = Topic.of("citus-retention-sleepy", Empty.class);

    static final Saga<Empty> PARENT_SAGA = Saga.on(PARENT, "citus-retention-parent")
            .step("fan-out", step -> {
                step.launch(CHILD, new Empty());
                step.launch(CHILD, new Empty());
            })
            .step("after", step -> {
            })
            .build();
    static final Saga<Empty> CHILD_SAGA = Saga.on(CHILD, "citus-retention-child").step("work", step -> {
    }).build();
    static final Saga<Empty> FAILING_SAGA = Saga.on(FAILING, "citus-retention-failing")
            .step("launch", step -> step.launch(CHILD, new Empty()))
            .compensateWith((step, cause) -> {
            })
            .step("fail", step -> {
                throw new IllegalStateException("boom");
            })
            .build();
    static final Saga<Empty> SLEEPY_SAGA = Saga.on(SLEEPY, "citus-retention-sleepy")
            .step("before", step -> {
            })
            .sleep("nap", Duration.ofHours(1))
            .step("after", step -> {
            })
            .build();

    record Rows(long messages, long runs, long events) {
    }

    @BeforeAll
    static void migrate() {
        Coop.client(db.dataSource()); // migrations and the Citus layout
    }

    static CoopEngine engine() {
        return CitusHappyPathTest.engine(db.dataSource())
                .register(PARENT_SAGA, CHILD_SAGA, FAILING_SAGA, SLEEPY_SAGA).start();
    }

    @Test
    void finished_hierarchies_are_deleted_whole_a_dry_run_deletes_nothing_and_a_sleeping_one_is_kept()
            throws SQLException {
        try (CoopEngine engine = engine()) {
            CoopClient client = engine.client();
            MessageId committed = client.launch(PARENT, new Empty());
            MessageId rolledBack = client.launch(FAILING, new Empty());
            MessageId sleeping = client.launch(SLEEPY, new Empty());
            assertThat(client.awaitCompletion(committed, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.awaitCompletion(rolledBack, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            Await.until("the sleepy run sleeps", WAIT,
                    () -> client.tree(sleeping).runs().getFirst().steps().size() == 2);
            assertThat(rows(committed)).isEqualTo(new Rows(3, 3, rows(committed).events()));
            Rows before = rows(committed);

            PruneResult wouldGo = client.pruneDryRun(Duration.ZERO);
            assertThat(wouldGo.dryRun()).isTrue();
            assertThat(wouldGo.hierarchies()).isGreaterThanOrEqualTo(2);
            assertThat(wouldGo.sample()).isNotEmpty();
            assertThat(rows(committed)).isEqualTo(before);

            PruneResult pruned = client.prune(Duration.ZERO);
            assertThat(pruned.dryRun()).isFalse();
            assertThat(pruned.hierarchies()).isGreaterThanOrEqualTo(2);
            for (MessageId gone : List.of(committed, rolledBack)) {
                assertThat(rows(gone)).isEqualTo(new Rows(0, 0, 0));
                assertThatThrownBy(() -> client.tree(gone)).isInstanceOf(CoopValidationException.class)
                        .hasMessageContaining("No message " + gone);
            }
            assertThat(rows(sleeping).runs()).isEqualTo(1);
            assertThat(client.tree(sleeping).runs().getFirst().status()).isEqualTo(RunStatus.RUNNABLE);
        }
    }

    @Test
    void an_engine_with_retention_deletes_finished_hierarchies_by_itself() {
        try (CoopEngine engine = CitusHappyPathTest.engine(db.dataSource()).register(PARENT_SAGA, CHILD_SAGA)
                .retention(Duration.ofMillis(1)).start()) {
            MessageId id = engine.client().launch(PARENT, new Empty());
            Await.until("the finished hierarchy is deleted", WAIT, () -> {
                try {
                    return rows(id).equals(new Rows(0, 0, 0));
                } catch (SQLException e) {
                    throw new IllegalStateException(e);
                }
            });
        }
    }

    /** What is left of the hierarchy rooted at {@code root}, read by root (one shard). */
    static Rows rows(MessageId root) throws SQLException {
        try (Connection c = db.dataSource().getConnection(); PreparedStatement ps = c.prepareStatement("""
                SELECT (SELECT count(*) FROM coop.message WHERE root_id = ?),
                       (SELECT count(*) FROM coop.run WHERE root_id = ?),
                       (SELECT count(*) FROM coop.event WHERE root_id = ?)
                """)) {
            for (int i = 1; i <= 3; i++) {
                ps.setObject(i, root.value());
            }
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return new Rows(rs.getLong(1), rs.getLong(2), rs.getLong(3));
            }
        }
    }
}
