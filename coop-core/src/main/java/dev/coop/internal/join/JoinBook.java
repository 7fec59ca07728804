package dev.coop.internal.join;

import com.fasterxml.jackson.core.JsonProcessingException;
import dev.coop.MessageId;
import dev.coop.RunStatus;
import dev.coop.failure.CoopValidationException;
import dev.coop.internal.store.Json;
import dev.coop.internal.store.Store;
import dev.coop.internal.store.Uuids;
import dev.coop.join.AttachResult;
import dev.coop.join.JoinId;
import dev.coop.join.JoinMemberState;
import dev.coop.join.JoinStatus;
import dev.coop.join.JoinView;
import dev.coop.join.ReportResult;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;

/**
 * Joins (tables {@code join_group} and {@code join_member}): starting, attaching, settling members (when their runs
 * finish, or by explicit report; {@link JoinSettlement}), publishing the one outcome message, timeouts, and reading
 * joins ({@link JoinReads}). The statements are in {@link JoinSql}.
 *
 * <p>
 * Locking, so that no settlement is lost and no join publishes twice:
 * <ul>
 * <li>every change of a member's state or of a join's counters happens while the transaction holds the join's row
 * lock, and the transition out of {@code OPEN} is part of the statement that updates the counters;</li>
 * <li>a transaction that finishes runs first locks the pending member rows of their messages (and their joins), and
 * only then, in a new statement (a fresh snapshot), reads whether every run of each message finished: of two runs of
 * one message finishing at once, the second to take the member lock sees the first one committed;</li>
 * <li>attach takes the message's advisory lock exclusively before it reads the runs and inserts the member, and a
 * transaction finishing runs takes it shared before it looks for members: the finishing transaction either committed
 * before attach read the runs (attach sees them finished and settles the member itself), or finds the member after
 * attach committed. Attach waits only for the few statements between a finishing transaction's lookup and its
 * commit, never for a running step.</li>
 * </ul>
 * Lock order is advisory lock, then member rows, then join rows (by join id), everywhere.
 */
public final class JoinBook {
    /** The largest metadata accepted, in bytes of JSON. */
    public static final int MAX_METADATA_BYTES = 64 * 1024;
    /** How many due joins one timeout transaction fires at most. */
    static final int TIMEOUT_BATCH = 100;

    private final Store store;
    private final Json json;
    private final JoinReads reads;
    private final JoinSettlement settlement;

    public JoinBook(Store store, Json json) {
        this.store = store;
        this.json = json;
        this.reads = new JoinReads(store, json);
        this.settlement = new JoinSettlement(store, json, reads);
    }

    private String sql(String template) {
        return store.schema().sql(template);
    }

    // ---- the engine's hook

    /**
     * Called in the transaction that finished a run of {@code message} (and committed the runs of the messages
     * {@code alsoFinished} by cascading completion), before it commits. Costs one probe of the pending-member index
     * when none of these messages is a pending member of a join.
     *
     * @return the sagas that got runs from outcome messages published here (to wake after the commit)
     */
    public Set<String> runsFinished(Connection c, UUID message, List<UUID> alsoFinished) throws SQLException {
        return settlement.runsFinished(c, message, alsoFinished);
    }

    // ---- client operations

    /** Serializes metadata for {@link #start}, refusing what cannot be stored. */
    public String metadataJson(Object metadata) {
        if (metadata == null) {
            return null;
        }
        String text;
        try {
            text = json.mapper().writeValueAsString(metadata);
        } catch (JsonProcessingException e) {
            throw new CoopValidationException("A join's metadata of type " + metadata.getClass().getName()
                    + " cannot be serialized to JSON: " + e.getOriginalMessage(), e);
        }
        if (Json.containsNul(text)) {
            throw new CoopValidationException(
                    "A join's metadata contains a NUL character (\\u0000), which PostgreSQL cannot store in jsonb");
        }
        int bytes = text.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > MAX_METADATA_BYTES) {
            throw new CoopValidationException("A join's metadata is " + bytes + " bytes of JSON, over the limit of "
                    + MAX_METADATA_BYTES + " bytes");
        }
        return text;
    }

    /** Inserts an open join; the caller validated every value. */
    public JoinId start(Connection c, String key, int expected, boolean failIfAnyFailed, String metadataJson,
            String onCompleteTopic, String onFailTopic, Long timeoutMillis) throws SQLException {
        UUID id = Uuids.v7();
        try (PreparedStatement ps = c.prepareStatement(sql(JoinSql.START))) {
            ps.setObject(1, id);
            ps.setString(2, key);
            ps.setInt(3, expected);
            ps.setBoolean(4, failIfAnyFailed);
            ps.setString(5, metadataJson);
            ps.setString(6, onCompleteTopic);
            ps.setString(7, onFailTopic);
            ps.setObject(8, store.time().bind());
            if (timeoutMillis == null) {
                ps.setNull(9, Types.BIGINT);
            } else {
                ps.setLong(9, timeoutMillis);
            }
            ps.executeUpdate();
        }
        return new JoinId(id);
    }

    /**
     * Attaches a message to an open join, settling it at once when every run of the message already finished (a
     * message launched without any saga registered counts as completed). A member id that is no message (yet) stays
     * pending until reported, or until runs of a message with that id finish.
     */
    public AttachResult attach(Connection c, JoinId join, MessageId message) throws SQLException {
        // 0. a member already (committed, or attached earlier in this transaction): nothing to lock or check
        if (isMember(c, join, message)) {
            return AttachResult.ALREADY_ATTACHED;
        }
        // 1. the message's advisory lock: transactions finishing its runs take it shared before they look for
        // members, so each one either committed before we read the runs below, or finds our member after our commit
        List<RunStatus> statuses = lockAndReadRuns(c, message);
        // 2. lock the join and check it can take the member
        if (!lockJoinFor(c, join, message)) {
            return AttachResult.ALREADY_ATTACHED;
        }
        // 3. the member
        try (PreparedStatement ps = c.prepareStatement(sql(JoinSql.ATTACH_INSERT))) {
            ps.setObject(1, join.value());
            ps.setObject(2, message.value());
            ps.setObject(3, join.value());
            ps.executeUpdate();
        }
        // 4. settle it now if its runs are all finished already
        JoinMemberState state = finishedState(c, message, statuses);
        if (state != null) {
            settlement.settle(c, List.of(new JoinSettlement.Settlement(join.value(), message.value(), state)), false);
        }
        return AttachResult.ATTACHED;
    }

    private boolean isMember(Connection c, JoinId join, MessageId message) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql(JoinSql.IS_MEMBER))) {
            ps.setObject(1, join.value());
            ps.setObject(2, message.value());
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next();
            }
        }
    }

    /** Takes the message's advisory lock exclusively, then reads the statuses of its runs. */
    private List<RunStatus> lockAndReadRuns(Connection c, MessageId message) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql(JoinSql.ATTACH_LOCK_MESSAGE))) {
            ps.setObject(1, message.value());
            ps.execute();
        }
        List<RunStatus> statuses = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(sql(JoinSql.ATTACH_RUNS))) {
            ps.setObject(1, message.value());
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    statuses.add(RunStatus.valueOf(rs.getString(1)));
                }
            }
        }
        return statuses;
    }

    /**
     * Locks the join and checks that it can take the member: false when the message is a member already; refused
     * when the join ended or has its expected members.
     */
    private boolean lockJoinFor(Connection c, JoinId join, MessageId message) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql(JoinSql.ATTACH_LOCK_JOIN))) {
            ps.setObject(1, message.value());
            ps.setObject(2, join.value());
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    throw noJoin(store, join);
                }
                if (rs.getBoolean(4)) {
                    return false;
                }
                JoinStatus status = JoinStatus.valueOf(rs.getString(1));
                if (status != JoinStatus.OPEN) {
                    throw new CoopValidationException("Cannot attach message " + message + " to join " + join
                            + ": the join already ended (" + status + ")");
                }
                if (rs.getInt(3) >= rs.getInt(2)) {
                    throw new CoopValidationException("Cannot attach message " + message + " to join " + join
                            + ": it already has its " + rs.getInt(2) + " expected member(s)");
                }
                return true;
            }
        }
    }

    /** The state of a member whose runs all finished already (no runs: completed if it exists), else null. */
    private JoinMemberState finishedState(Connection c, MessageId message, List<RunStatus> statuses)
            throws SQLException {
        if (statuses.isEmpty()) {
            // launched when no saga was registered: nothing will run
            return store.messageExists(c, message) ? JoinMemberState.COMPLETED : null;
        }
        if (statuses.stream().allMatch(RunStatus::isFinished)) {
            return statuses.stream().allMatch(s -> s == RunStatus.COMMITTED)
                    ? JoinMemberState.COMPLETED
                    : JoinMemberState.FAILED;
        }
        return null;
    }

    /** Settles a member explicitly; a member settled before stays as it was. */
    public ReportResult report(Connection c, JoinId join, MessageId message, boolean failed) throws SQLException {
        String state;
        try (PreparedStatement ps = c.prepareStatement(sql(JoinSql.REPORT_LOCK))) {
            ps.setObject(1, join.value());
            ps.setObject(2, message.value());
            try (ResultSet rs = ps.executeQuery()) {
                state = rs.next() ? rs.getString(1) : null;
            }
        }
        if (state == null) {
            if (!joinExists(c, join)) {
                throw noJoin(store, join);
            }
            throw new CoopValidationException(
                    "Message " + message + " is not a member of join " + join + "; attach it first");
        }
        if (!JoinMemberState.PENDING.name().equals(state)) {
            return ReportResult.ALREADY_SETTLED;
        }
        settlement.settle(c, List.of(new JoinSettlement.Settlement(join.value(), message.value(),
                failed ? JoinMemberState.FAILED : JoinMemberState.COMPLETED)), true);
        return ReportResult.RECORDED;
    }

    private boolean joinExists(Connection c, JoinId join) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql(JoinSql.JOIN_EXISTS))) {
            ps.setObject(1, join.value());
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next();
            }
        }
    }

    static CoopValidationException noJoin(Store store, JoinId join) {
        return new CoopValidationException("No join " + join + " in schema '" + store.schema().value() + "'");
    }

    // ---- timeouts

    /** What one timeout transaction did. */
    public record Fired(int count, Set<String> sagas) {
    }

    /**
     * Ends open joins whose timeout passed (by the engine's time), at most {@value #TIMEOUT_BATCH}, skipping joins another
     * transaction holds, and publishes their on-fail messages.
     */
    public Fired fireTimeouts(Connection c) throws SQLException {
        List<JoinSettlement.Ended> fired = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(sql(JoinSql.FIRE_TIMEOUTS))) {
            OffsetDateTime now = store.time().bind();
            ps.setObject(1, now);
            ps.setInt(2, TIMEOUT_BATCH);
            ps.setArray(3, c.createArrayOf("uuid", JoinSettlement.outcomeIds(TIMEOUT_BATCH)));
            ps.setObject(4, now);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    fired.add(new JoinSettlement.Ended(rs.getObject(1, UUID.class), rs.getObject(2, UUID.class)));
                }
            }
        }
        Set<String> sagas = new LinkedHashSet<>();
        for (JoinSettlement.Ended f : fired) {
            sagas.addAll(settlement.publish(c, f));
        }
        return new Fired(fired.size(), sagas);
    }

    /** Milliseconds until the earliest open join times out (zero or less: due), or null when none has a timeout. */
    public Long millisUntilNextTimeout(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql(JoinSql.NEXT_TIMEOUT))) {
            ps.setObject(1, store.time().bind());
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                long millis = rs.getLong(1);
                return rs.wasNull() ? null : millis;
            }
        }
    }

    // ---- reading

    /** The join with its members, or a {@link CoopValidationException} when there is none. */
    public JoinView get(Connection c, JoinId join) throws SQLException {
        return reads.get(c, join);
    }

    /** Joins with this grouping key, newest first, with their members. */
    public List<JoinView> byKey(Connection c, String key, int limit) throws SQLException {
        return reads.byKey(c, key, limit);
    }

}
