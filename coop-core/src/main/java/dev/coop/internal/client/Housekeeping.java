package dev.coop.internal.client;

import dev.coop.PruneResult;
import dev.coop.failure.CoopStoreException;
import dev.coop.inspect.SagaVersionSummary;
import dev.coop.internal.runtime.Topology;
import dev.coop.internal.retention.Retention;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/** What a client clears away: finished hierarchies (retention), and sagas or saga versions from the registry. */
public final class Housekeeping {
    private final ClientContext client;
    private final Topology topology;

    public Housekeeping(ClientContext client) {
        this.client = client;
        this.topology = new Topology(client.schema());
    }

    public PruneResult prune(Duration olderThan) {
        Arguments.checkAge(olderThan);
        return new Retention(client.schema(), client.time()).pruneAll(client.dataSource(), olderThan);
    }

    public PruneResult pruneDryRun(Duration olderThan) {
        Arguments.checkAge(olderThan);
        return new Retention(client.schema(), client.time()).dryRun(client.dataSource(), olderThan);
    }

    public boolean retireSaga(String saga) {
        try (Connection c = client.dataSource().getConnection()) {
            return topology.retire(c, saga);
        } catch (SQLException e) {
            throw new CoopStoreException("Could not retire saga '" + saga + "': " + e.getMessage(), e);
        }
    }

    public boolean retireSagaVersion(String saga, int version) {
        Objects.requireNonNull(saga, "saga");
        return client.inTransaction("retire version " + version + " of saga '" + saga + "'",
                c -> topology.retireVersion(c, saga, version));
    }

    public List<SagaVersionSummary> sagaVersions() {
        return client.inTransaction("list the saga versions", topology::versions);
    }
}
