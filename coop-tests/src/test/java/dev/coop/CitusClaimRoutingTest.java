package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.CitusStatements.Verdict;
import dev.coop.internal.store.SchemaName;
import dev.coop.internal.store.Store;
import dev.coop.internal.store.Time;
import dev.coop.test.CitusDatabase;
import java.sql.Connection;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The claim by saga on Citus as the store sends it ({@code ShardedClaims}): the candidates' read is one task per
 * shard, and every statement of the claimed step's transaction that follows it (the lock of a candidate by root and
 * id, the reclaim by id, the SEEN and message read) is one task on one node.
 */
class CitusClaimRoutingTest {
    @RegisterExtension
    static final CitusDatabase db = new CitusDatabase(2);

    @Test
    void the_claim_reads_every_shard_once_and_locks_on_one() throws Exception {
        Coop.client(db.dataSource()); // migrations and the Citus layout
        Store store = new Store(new SchemaName("coop").onCitus(), Time.DATABASE);
        List<String> sent = store.shardedClaimSql();
        assertThat(sent).hasSize(5);
        try (Connection c = db.cluster().connect(db.cluster().ports().get(0), db.databaseName())) {
            c.setAutoCommit(false);
            Verdict candidates = CitusStatements.explainSent(c, "candidates", sent.get(0));
            Verdict bySaga = CitusStatements.explainSent(c, "lock by saga", sent.get(1));
            Verdict byId = CitusStatements.explainSent(c, "lock by id", sent.get(2));
            Verdict seen = CitusStatements.explainSent(c, "SEEN", sent.get(3));
            Verdict unchanged = CitusStatements.explainSent(c, "lock unchanged", sent.get(4));
            System.out.println(String.join("\n", candidates.toString(), bySaga.toString(), byId.toString(),
                    seen.toString(), unchanged.toString()));
            assertThat(candidates.tasks()).as(candidates.toString()).isEqualTo(8); // citus.shard_count of CoopCitus
            assertThat(bySaga.tasks()).as(bySaga.toString()).isEqualTo(1);
            assertThat(byId.tasks()).as(byId.toString()).isEqualTo(1);
            assertThat(seen.tasks()).as(seen.toString()).isEqualTo(1);
            assertThat(unchanged.tasks()).as(unchanged.toString()).isEqualTo(1);
        }
    }
}
