package dev.coop.internal.join;

import dev.coop.internal.store.Emission;
import dev.coop.internal.store.Json;
import dev.coop.internal.store.Store;
import dev.coop.internal.store.Uuids;
import dev.coop.join.JoinMemberState;
import dev.coop.join.JoinResult;
import dev.coop.join.JoinStatus;
import dev.coop.join.JoinView;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

/**
 * Settles join members and publishes the outcome of the joins that end: when the runs of member messages finish (the
 * engine's hook), when a message attached already finished, by report, and at a timeout. The caller holds the locks
 * {@link JoinBook} describes.
 */
final class JoinSettlement {
    /** A member settled to a state. */
    record Settlement(UUID joinId, UUID messageId, JoinMemberState state) {
    }

    /** A join that left OPEN in this transaction, and the id of the message that announces it. */
    record Ended(UUID joinId, UUID outcomeMessageId) {
    }

    private final Store store;
    private final Json json;
    private final JoinReads reads;
    private final String lockPendingSql;
    private final String outcomesSql;
    private final String settleSql;

    JoinSettlement(Store store, Json json, JoinReads reads) {
        this.store = store;
        this.json = json;
        this.reads = reads;
        this.lockPendingSql = store.schema().sql(JoinSql.LOCK_PENDING);
        this.outcomesSql = store.schema().sql(JoinSql.OUTCOMES);
        this.settleSql = store.schema().sql(JoinSql.SETTLE);
    }

    /**
     * Called in the transaction that finished a run of {@code message} (and committed the runs of the messages
     * {@code alsoFinished} by cascading completion), before it commits. Costs one probe of the pending-member index
     * when none of these messages is a pending member of a join.
     *
     * @return the sagas that got runs from outcome messages published here (to wake after the commit)
     */
    Set<String> runsFinished(Connection c, UUID message, List<UUID> alsoFinished) throws SQLException {
        UUID[] messages = new UUID[1 + alsoFinished.size()];
        messages[0] = message;
        for (int i = 0; i < alsoFinished.size(); i++) {
            messages[i + 1] = alsoFinished.get(i);
        }
        List<UUID[]> pending = new ArrayList<>(); // still PENDING: join id, message id
        try (PreparedStatement ps = c.prepareStatement(lockPendingSql)) {
            ps.setArray(1, c.createArrayOf("uuid", messages));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    pending.add(new UUID[]{rs.getObject(1, UUID.class), rs.getObject(2, UUID.class)});
                }
            }
        }
        return pendingFound(c, pending);
    }

    /**
     * Settles the pending memberships {@link #runsFinished} found locked.
     *
     * @param found join id and message id of each pending membership, as the statement returned them
     */
    private Set<String> pendingFound(Connection c, List<UUID[]> found) throws SQLException {
        List<Settlement> pending = new ArrayList<>(found.size());
        for (UUID[] f : found) {
            pending.add(new Settlement(f[0], f[1], JoinMemberState.PENDING));
        }
        if (pending.isEmpty()) {
            return Set.of();
        }
        // a new statement, so a new snapshot: runs of these messages committed by transactions that held the member
        // locks before us are seen finished
        Map<UUID, JoinMemberState> outcomes = new HashMap<>();
        try (PreparedStatement ps = c.prepareStatement(outcomesSql)) {
            ps.setArray(1, c.createArrayOf("uuid",
                    pending.stream().map(Settlement::messageId).distinct().toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    if (rs.getBoolean(2)) {
                        outcomes.put(rs.getObject(1, UUID.class),
                                rs.getBoolean(3) ? JoinMemberState.FAILED : JoinMemberState.COMPLETED);
                    }
                }
            }
        }
        List<Settlement> settlements = new ArrayList<>();
        for (Settlement p : pending) {
            JoinMemberState state = outcomes.get(p.messageId());
            if (state != null) {
                settlements.add(new Settlement(p.joinId(), p.messageId(), state));
            }
        }
        return settle(c, settlements, false);
    }

    /** Settles members, counts them at their joins, and publishes the outcome of every join that ended here. */
    Set<String> settle(Connection c, List<Settlement> settlements, boolean reported) throws SQLException {
        if (settlements.isEmpty()) {
            return Set.of();
        }
        int n = settlements.size();
        UUID[] joins = new UUID[n];
        UUID[] messages = new UUID[n];
        String[] states = new String[n];
        for (int i = 0; i < n; i++) {
            joins[i] = settlements.get(i).joinId();
            messages[i] = settlements.get(i).messageId();
            states[i] = settlements.get(i).state().name();
        }
        List<Ended> ended = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(settleSql)) {
            ps.setArray(1, c.createArrayOf("uuid", joins));
            ps.setArray(2, c.createArrayOf("uuid", messages));
            ps.setArray(3, c.createArrayOf("text", states));
            ps.setString(4, reported ? "REPORT" : "RUNS");
            OffsetDateTime now = store.time().bind();
            ps.setObject(5, now);
            ps.setArray(6, c.createArrayOf("uuid", outcomeIds((int) Arrays.stream(joins).distinct().count())));
            ps.setObject(7, now);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    if (rs.getBoolean(4)) {
                        ended.add(new Ended(rs.getObject(1, UUID.class), rs.getObject(3, UUID.class)));
                    }
                }
            }
        }
        Set<String> sagas = new LinkedHashSet<>();
        for (Ended e : ended) {
            sagas.addAll(publish(c, e));
        }
        return sagas;
    }

    /** Fresh ids for the outcome messages of joins that may end in one statement. */
    static UUID[] outcomeIds(int joins) {
        UUID[] ids = new UUID[joins];
        for (int i = 0; i < joins; i++) {
            ids[i] = Uuids.v7();
        }
        return ids;
    }

    /**
     * Publishes the outcome message of a join that just left OPEN (its row is locked by this transaction): on the
     * on-complete topic when it completed, else on the on-fail topic, on the global scope.
     */
    Set<String> publish(Connection c, Ended ended) throws SQLException {
        JoinView join = reads.read(c, ended.joinId());
        List<JoinResult.Member> members = join.members().stream()
                .map(m -> new JoinResult.Member(m.message().value(), m.state())).toList();
        JoinResult result = new JoinResult(ended.joinId(), join.key(), join.status(), join.metadata(), join.expected(),
                join.attached(), join.completed(), join.failed(), members);
        String topic = join.status() == JoinStatus.COMPLETED ? join.onCompleteTopic() : join.onFailTopic();
        Emission emission = new Emission(ended.outcomeMessageId(), topic, json.write(result));
        return store.emit(c, null, null, null, null, null, null, List.of(emission)).keySet();
    }
}
