package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.CitusStatements.Verdict;
import dev.coop.test.CitusDatabase;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Every SQL constant of Coop's store planned on the cluster ({@link CitusStatements}); the verdicts are written to
 * {@code target/citus-statements.txt}. docs/guide/citus.md lists the refused ones and whose they are.
 */
class CitusStatementAuditTest {
    @RegisterExtension
    static final CitusDatabase db = new CitusDatabase(2);

    @Test
    void every_statement_is_planned_and_the_refused_ones_are_recorded() throws Exception {
        Coop.client(db.dataSource()); // migrations and the Citus layout
        Map<String, Verdict> verdicts = CitusStatements.explainAll(db);
        String report = verdicts.values().stream().map(Verdict::toString).collect(Collectors.joining("\n"))
                + "\n\n# the advance without claim_lost, commit_allowed, assert_not_cancelled (replaced by IMMUTABLE true)\n"
                + CitusStatements.explainAdvanceWithoutItsFunctions(db).values().stream().map(Verdict::toString)
                        .collect(Collectors.joining("\n"));
        Files.writeString(Path.of("target", "citus-statements.txt"), report + "\n", StandardCharsets.UTF_8);
        System.out.println(report);
        assertThat(verdicts).hasSizeGreaterThan(20);
        // routed where it already works: a scoped launch and the registry's upsert are one task on one node
        assertThat(verdicts.get("EmitSql.EMIT").tasks()).isEqualTo(1);
        assertThat(verdicts.get("Topology.REGISTER").tasks()).isEqualTo(1);
        assertThat(verdicts.get("AdvanceSql.PARK_AFTER_RETRIES").tasks()).isEqualTo(1);
        // a cancellation's ON CONFLICT (scope_id) finds the per-shard index of CitusLayout; its row lock by id
        // without the root is what Citus refuses next
        assertThat(verdicts.get("SelectionBatches.CANCEL").error()).doesNotContain("ON CONFLICT")
                .contains("FOR UPDATE");
        // the one-statement claim by saga stays refused: on Citus the store claims through ShardedClaims
        // (CitusClaimRoutingTest)
        assertThat(verdicts.get("ClaimSql.CLAIM by saga").error()).contains("FOR UPDATE");
        // the advance's checks are a guard without tables (schema version 30): each advance is one task on one node
        for (String advance : new String[]{"AdvanceSql.ADVANCE", "AdvanceSql.ADVANCE_ALONE", "AdvanceSql.COUNT_OFF",
                "AdvanceSql.POSTPONE"}) {
            assertThat(verdicts.get(advance).tasks()).as(verdicts.get(advance).toString()).isEqualTo(1);
        }
        // the operators' and the client's forms on Citus: by root, one task; read across shards, one per shard
        // (RootCancellation.WAKE too, as sent: the audit plans its {now} as plain PostgreSQL's, see the guide)
        for (String byRoot : List.of("RootCancellation.REQUEST", "RootCancellation.REACHED",
                "RootCancellation.LOCK_DUE", "Unfinished.WHY_UNFINISHED_BY_ROOT",
                "BulkActions.LOCK_BY_ROOT", "BulkActions.RETRY_BY_ROOT", "Retention.BUSY_BY_ROOT",
                "RootSettlement.LOCK_RUN", "RootTimeOut.SETTLED", "RootTimeOut.COUNTED",
                "RootChildren.DETACH_UNSTARTED", "RootChildren.SETTLE", "RootChildren.COUNTED",
                "RootChildRollbacks.TARGETS", "RootCompensations.OUTCOMES", "Inspection.DUE_BY_ROOT")) {
            assertThat(verdicts.get(byRoot).tasks()).as(byRoot).isEqualTo(1);
        }
        for (String across : List.of("BulkActions.PARKED_BY_ROOT", "Retention.CANDIDATES_BY_ROOT",
                "Retention.COUNT_BY_ROOT", "Retention.SAMPLE_ROOTS_BY_ROOT")) {
            assertThat(verdicts.get(across).tasks()).as(across).isEqualTo(8);
        }
        // external tasks' rows are the coordinator's: read with their runs joined by root, written from bound values
        for (String planned : List.of("TaskReads.LIST_OPEN_BY_ROOT", "RootSettlement.LOGGED",
                "RootChildren.LOGGED", "RootTimeOut.LOGGED", "RootChildRollbacks.EMITTED", "RootCompensations.LOGGED",
                "RootCompensations.COMPENSATING", "RootCompensations.SETTLED", "RootOpening.TASKS")) {
            assertThat(verdicts.get(planned).refused()).as(verdicts.get(planned).toString()).isFalse();
        }
    }
}
