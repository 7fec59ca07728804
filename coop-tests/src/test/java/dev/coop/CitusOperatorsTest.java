package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.coop.Payloads.Empty;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.AuditEntry;
import dev.coop.inspect.RunQuery;
import dev.coop.test.CitusDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Operators' bulk actions and retention on a three-node Citus cluster, over hierarchies on several shards: retrying
 * a saga's parked runs ({@code BulkActions.RETRY_BY_ROOT}), cancelling a selection
 * ({@code SelectionBatches}' cancellation by root) and pruning finished hierarchies ({@code Retention}'s forms by
 * root). The states no step can reach on Citus yet (a parked run, a committed hierarchy) are written with SQL.
 */
class CitusOperatorsTest {
    @RegisterExtension
    static final CitusDatabase db = new CitusDatabase();

    @BeforeAll
    static void migrate() {
        Coop.client(db.dataSource()); // migrations and the Citus layout
    }

    /** {@code n} hierarchies of a registered saga on {@code topic}, launched and not claimed. */
    static List<MessageId> launched(CoopClient client, Topic<Empty> topic, int n) {
        List<MessageId> ids = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            ids.add(client.launch(topic, new Empty()));
        }
        return ids;
    }

    static Saga<Empty> saga(Topic<Empty> topic, String name) {
        return Saga.on(topic, name).step("s0", step -> {
        }).build();
    }

    @Test
    void retrying_a_sagas_parked_runs_on_several_shards_makes_each_runnable_logs_it_and_audits_it()
            throws SQLException {
        Topic<Empty> topic = Topic.of("citus-retry-parked", Empty.class);
        CoopClient client = CitusCancellationTest.registered(db, saga(topic, "citus-retry-parked"));
        List<MessageId> ids = launched(client, topic, 6);
        for (MessageId id : ids) {
            CitusCancellationTest.set(db, id, "status = 'PARKED', attempt = 3");
        }
        assertThat(shards(ids)).as("the hierarchies are on more than one shard").isGreaterThan(1);
        assertThat(client.countParked("citus-retry-parked")).isEqualTo(6);

        assertThat(client.retryParked("citus-retry-parked", "ops", "the service is back")).isEqualTo(6);
        assertThat(client.countParked("citus-retry-parked")).isZero();
        for (MessageId id : ids) {
            assertThat(client.statuses(id)).containsExactly(RunStatus.RUNNABLE);
            assertThat(eventTypes(id)).contains("RETRIED");
            List<AuditEntry> audit = client.audit(id);
            assertThat(audit).singleElement().satisfies(a -> {
                assertThat(a.action()).isEqualTo("retry-parked");
                assertThat(a.actor()).isEqualTo("ops");
                assertThat(a.outcome()).isEqualTo("RETRYING 1 parked run(s) of saga citus-retry-parked");
            });
        }
        assertThat(client.retryParked("citus-retry-parked", "ops", "again")).isZero();
    }

    @Test
    void cancelling_a_selection_requests_each_runs_cancellation_once_and_audits_each_hierarchy()
            throws SQLException {
        Topic<Empty> topic = Topic.of("citus-cancel-selection", Empty.class);
        CoopClient client = CitusCancellationTest.registered(db, saga(topic, "citus-cancel-selection"));
        List<MessageId> ids = launched(client, topic, 5);
        CitusCancellationTest.set(db, ids.get(0), "status = 'PARKED'");
        CitusCancellationTest.set(db, ids.get(1), "status = 'WAITING', runnable_at = 'infinity'");
        assertThat(shards(ids)).isGreaterThan(1);
        RunQuery selection = RunQuery.newest().saga("citus-cancel-selection");

        assertThat(client.cancel(selection, "ops", "wrong prices")).isEqualTo(5);
        for (MessageId id : ids) {
            assertThat(eventTypes(id)).containsOnlyOnce("CANCELLATION_REQUESTED");
            assertThat(client.statuses(id)).as("woken, the parked and the waiting one too")
                    .containsExactly(RunStatus.RUNNABLE);
            assertThat(client.audit(id)).singleElement().satisfies(a -> {
                assertThat(a.action()).isEqualTo("cancel-selection");
                assertThat(a.reason()).isEqualTo("wrong prices");
                assertThat(a.outcome()).isEqualTo(
                        "REQUESTED for 1 run(s) of a selection: saga=citus-cancel-selection");
            });
        }
        assertThat(client.cancel(selection, "ops", "again")).as("requested before: not counted again").isZero();
        assertThat(client.cancel(ids.get(2), "once more")).isEqualTo(CancelResult.ALREADY_REQUESTED);
    }

    @Test
    void pruning_deletes_finished_hierarchies_whole_and_keeps_the_others() throws SQLException {
        Topic<Empty> topic = Topic.of("citus-prune", Empty.class);
        CoopClient client = CitusCancellationTest.registered(db, saga(topic, "citus-prune"));
        List<MessageId> finished = launched(client, topic, 4);
        for (MessageId id : finished) {
            CitusCancellationTest.set(db, id, "status = 'COMMITTED', finished_at = now() - interval '2 days'");
        }
        MessageId recent = client.launch(topic, new Empty());
        CitusCancellationTest.set(db, recent, "status = 'COMMITTED', finished_at = now()");
        MessageId running = client.launch(topic, new Empty());
        assertThat(shards(finished)).isGreaterThan(1);

        var wouldGo = client.pruneDryRun(Duration.ofDays(1));
        assertThat(wouldGo.dryRun()).isTrue();
        assertThat(wouldGo.hierarchies()).isEqualTo(4);
        assertThat(wouldGo.sample()).containsExactlyInAnyOrderElementsOf(finished);
        for (MessageId id : finished) {
            assertThat(client.statuses(id)).as("a dry run deletes nothing").containsExactly(RunStatus.COMMITTED);
        }

        var pruned = client.prune(Duration.ofDays(1));
        assertThat(pruned.dryRun()).isFalse();
        assertThat(pruned.hierarchies()).isEqualTo(4);
        assertThat(pruned.runs()).isEqualTo(4);
        assertThat(pruned.messages()).isEqualTo(4);
        for (MessageId id : finished) {
            assertThatThrownBy(() -> client.statuses(id)).isInstanceOf(CoopValidationException.class)
                    .hasMessageContaining("No message " + id);
            assertThat(eventTypes(id)).isEmpty();
        }
        assertThat(client.statuses(recent)).containsExactly(RunStatus.COMMITTED);
        assertThat(client.statuses(running)).containsExactly(RunStatus.RUNNABLE);
        assertThat(client.prune(Duration.ofDays(1)).hierarchies()).isZero();
    }

    /** The types of a hierarchy's events, read by root (one shard). */
    static List<String> eventTypes(MessageId root) throws SQLException {
        List<String> types = new ArrayList<>();
        try (Connection c = db.dataSource().getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "SELECT type FROM coop.event WHERE root_id = ? ORDER BY id")) {
            ps.setObject(1, root.value());
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    types.add(rs.getString(1));
                }
            }
        }
        return types;
    }

    /** How many shards hold the runs of these hierarchies. */
    static int shards(List<MessageId> roots) throws SQLException {
        return shards(db.dataSource(), roots);
    }

    /** How many shards of the cluster behind {@code dataSource} hold the runs of these hierarchies. */
    static int shards(javax.sql.DataSource dataSource, List<MessageId> roots) throws SQLException {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement("""
                SELECT count(DISTINCT get_shard_id_for_distribution_column('coop.run', r))
                  FROM unnest(?::uuid[]) r""")) {
            ps.setArray(1, c.createArrayOf("uuid", roots.stream().map(MessageId::value).toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }
}
