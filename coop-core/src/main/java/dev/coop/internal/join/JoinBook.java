package dev.coop.internal.join;

import dev.coop.internal.store.Emission;
import dev.coop.internal.store.Json;
import dev.coop.internal.store.Store;
import dev.coop.internal.store.Uuids;

import dev.coop.join.Joins;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.NullNode;
import dev.coop.join.AttachResult;
import dev.coop.failure.CoopValidationException;
import dev.coop.join.JoinId;
import dev.coop.join.JoinMemberState;
import dev.coop.join.JoinResult;
import dev.coop.join.JoinStatus;
import dev.coop.join.JoinView;
import dev.coop.MessageId;
import dev.coop.join.ReportResult;
import dev.coop.RunStatus;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

/**
 * The statements of joins (tables {@code join_group} and {@code join_member}): starting, attaching, settling members
 * (when their runs finish, or by explicit report), publishing the one outcome message, timeouts, and reading joins.
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

    private static final String FINISHED = "('COMMITTED', 'ROLLED_BACK', 'ROLLBACK_FAILED')";
    private static final String FAILED = "('ROLLED_BACK', 'ROLLBACK_FAILED')";

    private static final String START = """
            INSERT INTO {schema}.join_group (id, grouping_key, expected, fail_if_any_failed, metadata, on_complete_topic,
                                             on_fail_topic, timeout_at)
            VALUES (?, ?, ?, ?, ?::jsonb, ?, ?, {now} + ?::bigint * interval '1 millisecond')
            """;

    /**
     * The engine's probe when runs finish: take the messages' advisory locks shared, then lock their pending
     * memberships and the joins (the function is in V2__joins.sql).
     */
    private static final String LOCK_PENDING = "SELECT join_id, message_id FROM {schema}.join_pending_members(?)";

    /** Per message: whether every run finished, and whether any failed. A message without runs has no row. */
    private static final String OUTCOMES = """
            SELECT message_id, bool_and(status IN %s), bool_or(status IN %s)
              FROM {schema}.run WHERE message_id = ANY(?) GROUP BY message_id
            """.formatted(FINISHED, FAILED);

    /**
     * Settles pending members and counts them at their joins; a join whose counts reach the expected count leaves
     * OPEN in this statement (an outcome message id is drawn for it). Returns every join counted, with whether this
     * statement ended it. Every caller holds the row locks of the joins involved, so the values read in
     * {@code ending} are the latest.
     */
    private static final String SETTLE = """
            WITH input AS (
              SELECT * FROM unnest(?::uuid[], ?::uuid[], ?::text[]) AS i(join_id, message_id, state)
            ), settled AS (
              UPDATE {schema}.join_member m
                 SET state = i.state, settled_by = ?, settled_at = clock_timestamp()
                FROM input i
               WHERE m.join_id = i.join_id AND m.message_id = i.message_id AND m.state = 'PENDING'
              RETURNING m.join_id, m.state
            ), counted AS (
              SELECT join_id, count(*) FILTER (WHERE state = 'COMPLETED')::int AS completed,
                     count(*) FILTER (WHERE state = 'FAILED')::int AS failed
                FROM settled GROUP BY join_id
            ), ending AS (
              SELECT g.id, g.status = 'OPEN' AND g.completed + g.failed + c.completed + c.failed >= g.expected AS ends,
                     g.fail_if_any_failed AND g.failed + c.failed > 0 AS fails, c.completed, c.failed
                FROM {schema}.join_group g JOIN counted c ON c.join_id = g.id
            )
            UPDATE {schema}.join_group g
               SET completed = g.completed + e.completed, failed = g.failed + e.failed,
                   status = CASE WHEN NOT e.ends THEN g.status WHEN e.fails THEN 'FAILED' ELSE 'COMPLETED' END,
                   finished_at = CASE WHEN e.ends THEN clock_timestamp() ELSE g.finished_at END,
                   outcome_message_id = CASE WHEN e.ends THEN {schema}.uuid_v7() ELSE g.outcome_message_id END
              FROM ending e
             WHERE g.id = e.id
            RETURNING g.id, g.status, g.outcome_message_id, e.ends
            """;

    private static final String IS_MEMBER = "SELECT 1 FROM {schema}.join_member WHERE join_id = ? AND message_id = ?";

    private static final String ATTACH_LOCK_MESSAGE = "SELECT pg_advisory_xact_lock({schema}.join_lock_key(?))";

    private static final String ATTACH_RUNS = "SELECT status FROM {schema}.run WHERE message_id = ?";

    private static final String ATTACH_LOCK_JOIN = """
            SELECT g.status, g.expected, g.attached,
                   EXISTS (SELECT 1 FROM {schema}.join_member m WHERE m.join_id = g.id AND m.message_id = ?)
              FROM {schema}.join_group g WHERE g.id = ? FOR UPDATE
            """;

    private static final String ATTACH_INSERT = """
            WITH member AS (
              INSERT INTO {schema}.join_member (join_id, message_id) VALUES (?, ?)
            )
            UPDATE {schema}.join_group SET attached = attached + 1 WHERE id = ?
            """;

    private static final String REPORT_LOCK = """
            SELECT m.state
              FROM {schema}.join_member m JOIN {schema}.join_group g ON g.id = m.join_id
             WHERE m.join_id = ? AND m.message_id = ?
               FOR UPDATE
            """;

    private static final String FIRE_TIMEOUTS = """
            WITH due AS (
              SELECT id FROM {schema}.join_group
               WHERE status = 'OPEN' AND timeout_at <= {now}
               ORDER BY timeout_at
               LIMIT ?
                 FOR UPDATE SKIP LOCKED
            )
            UPDATE {schema}.join_group g
               SET status = 'TIMED_OUT', finished_at = {now}, outcome_message_id = {schema}.uuid_v7()
              FROM due WHERE g.id = due.id
            RETURNING g.id, g.outcome_message_id
            """;

    private static final String NEXT_TIMEOUT = """
            SELECT ceil(extract(epoch FROM min(timeout_at) - {now}) * 1000)::bigint
              FROM {schema}.join_group WHERE status = 'OPEN' AND timeout_at IS NOT NULL
            """;

    private static final String JOIN_COLUMNS = """
            SELECT id, grouping_key, status, expected, attached, completed, failed, fail_if_any_failed, metadata::text,
                   on_complete_topic, on_fail_topic, timeout_at, created_at, finished_at, outcome_message_id
              FROM {schema}.join_group
            """;

    private static final String MEMBERS = """
            SELECT message_id, state, settled_by IS NOT DISTINCT FROM 'REPORT', attached_at, settled_at
              FROM {schema}.join_member WHERE join_id = ? ORDER BY attached_at, message_id
            """;

    private static final String MEMBERS_OF_JOINS = """
            SELECT message_id, state, settled_by IS NOT DISTINCT FROM 'REPORT', attached_at, settled_at, join_id
              FROM {schema}.join_member WHERE join_id = ANY(?) ORDER BY join_id, attached_at, message_id
            """;

    private final Store store;
    private final Json json;
    private final String lockPendingSql;
    private final String outcomesSql;
    private final String settleSql;

    public JoinBook(Store store, Json json) {
        this.store = store;
        this.json = json;
        this.lockPendingSql = sql(LOCK_PENDING);
        this.outcomesSql = sql(OUTCOMES);
        this.settleSql = sql(SETTLE);
    }

    private String sql(String template) {
        return store.schema().sql(template);
    }

    /** A member settled to a state. */
    private record Settlement(UUID joinId, UUID messageId, JoinMemberState state) {
    }

    /** A join that left OPEN in this transaction, and the id of the message that announces it. */
    private record Ended(UUID joinId, UUID outcomeMessageId) {
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
    private Set<String> settle(Connection c, List<Settlement> settlements, boolean reported) throws SQLException {
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

    /**
     * Publishes the outcome message of a join that just left OPEN (its row is locked by this transaction): on the
     * on-complete topic when it completed, else on the on-fail topic, on the global scope.
     */
    private Set<String> publish(Connection c, Ended ended) throws SQLException {
        JoinView join = read(c, ended.joinId());
        List<JoinResult.Member> members = join.members().stream()
                .map(m -> new JoinResult.Member(m.message().value(), m.state())).toList();
        JoinResult result = new JoinResult(ended.joinId(), join.key(), join.status(), join.metadata(), join.expected(),
                join.attached(), join.completed(), join.failed(), members);
        String topic = join.status() == JoinStatus.COMPLETED ? join.onCompleteTopic() : join.onFailTopic();
        Emission emission = new Emission(ended.outcomeMessageId(), topic, json.write(result));
        return store.emit(c, null, null, null, null, null, null, List.of(emission)).keySet();
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
        try (PreparedStatement ps = c.prepareStatement(sql(START))) {
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
        try (PreparedStatement ps = c.prepareStatement(sql(IS_MEMBER))) {
            ps.setObject(1, join.value());
            ps.setObject(2, message.value());
            try (ResultSet rs = ps.executeQuery()) {
                if (rs.next()) {
                    return AttachResult.ALREADY_ATTACHED;
                }
            }
        }
        // 1. the message's advisory lock: transactions finishing its runs take it shared before they look for
        // members, so each one either committed before we read the runs below, or finds our member after our commit
        try (PreparedStatement ps = c.prepareStatement(sql(ATTACH_LOCK_MESSAGE))) {
            ps.setObject(1, message.value());
            ps.execute();
        }
        List<RunStatus> statuses = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(sql(ATTACH_RUNS))) {
            ps.setObject(1, message.value());
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    statuses.add(RunStatus.valueOf(rs.getString(1)));
                }
            }
        }
        // 2. lock the join and check it can take the member
        try (PreparedStatement ps = c.prepareStatement(sql(ATTACH_LOCK_JOIN))) {
            ps.setObject(1, message.value());
            ps.setObject(2, join.value());
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    throw noJoin(join);
                }
                if (rs.getBoolean(4)) {
                    return AttachResult.ALREADY_ATTACHED;
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
            }
        }
        // 3. the member
        try (PreparedStatement ps = c.prepareStatement(sql(ATTACH_INSERT))) {
            ps.setObject(1, join.value());
            ps.setObject(2, message.value());
            ps.setObject(3, join.value());
            ps.executeUpdate();
        }
        // 4. settle it now if its runs are all finished already
        JoinMemberState state = null;
        if (statuses.isEmpty()) {
            if (store.messageExists(c, message)) {
                state = JoinMemberState.COMPLETED; // launched when no saga was registered: nothing will run
            }
        } else if (statuses.stream().allMatch(RunStatus::isFinished)) {
            state = statuses.stream().allMatch(s -> s == RunStatus.COMMITTED)
                    ? JoinMemberState.COMPLETED
                    : JoinMemberState.FAILED;
        }
        if (state != null) {
            settle(c, List.of(new Settlement(join.value(), message.value(), state)), false);
        }
        return AttachResult.ATTACHED;
    }

    /** Settles a member explicitly; a member settled before stays as it was. */
    public ReportResult report(Connection c, JoinId join, MessageId message, boolean failed) throws SQLException {
        String state;
        try (PreparedStatement ps = c.prepareStatement(sql(REPORT_LOCK))) {
            ps.setObject(1, join.value());
            ps.setObject(2, message.value());
            try (ResultSet rs = ps.executeQuery()) {
                state = rs.next() ? rs.getString(1) : null;
            }
        }
        if (state == null) {
            if (!joinExists(c, join)) {
                throw noJoin(join);
            }
            throw new CoopValidationException(
                    "Message " + message + " is not a member of join " + join + "; attach it first");
        }
        if (!JoinMemberState.PENDING.name().equals(state)) {
            return ReportResult.ALREADY_SETTLED;
        }
        settle(c, List.of(new Settlement(join.value(), message.value(),
                failed ? JoinMemberState.FAILED : JoinMemberState.COMPLETED)), true);
        return ReportResult.RECORDED;
    }

    private boolean joinExists(Connection c, JoinId join) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql("SELECT 1 FROM {schema}.join_group WHERE id = ?"))) {
            ps.setObject(1, join.value());
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next();
            }
        }
    }

    private CoopValidationException noJoin(JoinId join) {
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
        List<Ended> fired = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(sql(FIRE_TIMEOUTS))) {
            OffsetDateTime now = store.time().bind();
            ps.setObject(1, now);
            ps.setInt(2, TIMEOUT_BATCH);
            ps.setObject(3, now);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    fired.add(new Ended(rs.getObject(1, UUID.class), rs.getObject(2, UUID.class)));
                }
            }
        }
        Set<String> sagas = new LinkedHashSet<>();
        for (Ended f : fired) {
            sagas.addAll(publish(c, f));
        }
        return new Fired(fired.size(), sagas);
    }

    /** Milliseconds until the earliest open join times out (zero or less: due), or null when none has a timeout. */
    public Long millisUntilNextTimeout(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql(NEXT_TIMEOUT))) {
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
        JoinView view = read(c, join.value());
        if (view == null) {
            throw noJoin(join);
        }
        return view;
    }

    /** Joins with this grouping key, newest first, with their members. */
    public List<JoinView> byKey(Connection c, String key, int limit) throws SQLException {
        List<JoinView> views = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(
                sql(JOIN_COLUMNS + " WHERE grouping_key = ? ORDER BY created_at DESC, id DESC LIMIT ?"))) {
            ps.setString(1, key);
            ps.setInt(2, limit);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    views.add(readJoin(rs));
                }
            }
        }
        if (views.isEmpty()) {
            return views;
        }
        Map<UUID, List<JoinView.Member>> members = new HashMap<>();
        try (PreparedStatement ps = c.prepareStatement(sql(MEMBERS_OF_JOINS))) {
            ps.setArray(1, c.createArrayOf("uuid", views.stream().map(v -> v.id().value()).toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    members.computeIfAbsent(rs.getObject(6, UUID.class), k -> new ArrayList<>()).add(member(rs));
                }
            }
        }
        return views.stream().map(v -> withMembers(v, members.getOrDefault(v.id().value(), List.of()))).toList();
    }

    private JoinView read(Connection c, UUID joinId) throws SQLException {
        JoinView join;
        try (PreparedStatement ps = c.prepareStatement(sql(JOIN_COLUMNS + " WHERE id = ?"))) {
            ps.setObject(1, joinId);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return null;
                }
                join = readJoin(rs);
            }
        }
        return withMembers(join, members(c, joinId));
    }

    private static JoinView withMembers(JoinView v, List<JoinView.Member> members) {
        return new JoinView(v.id(), v.key(), v.status(), v.expected(), v.attached(), v.completed(), v.failed(),
                v.failIfAnyFailed(), v.metadata(), v.onCompleteTopic(), v.onFailTopic(), v.timeoutAt(),
                v.createdAt(), v.finishedAt(), v.outcomeMessage(), members);
    }

    private JoinView readJoin(ResultSet rs) throws SQLException {
        String metadata = rs.getString(9);
        JsonNode node;
        try {
            node = metadata == null ? NullNode.getInstance() : json.mapper().readTree(metadata);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("Stored join metadata is not JSON: " + e.getOriginalMessage(), e);
        }
        UUID outcome = rs.getObject(15, UUID.class);
        return new JoinView(new JoinId(rs.getObject(1, UUID.class)), rs.getString(2),
                JoinStatus.valueOf(rs.getString(3)), rs.getInt(4), rs.getInt(5), rs.getInt(6), rs.getInt(7),
                rs.getBoolean(8), node, rs.getString(10), rs.getString(11), rs.getObject(12, OffsetDateTime.class),
                rs.getObject(13, OffsetDateTime.class), rs.getObject(14, OffsetDateTime.class),
                outcome == null ? null : new MessageId(outcome), List.of());
    }

    private List<JoinView.Member> members(Connection c, UUID joinId) throws SQLException {
        List<JoinView.Member> members = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(sql(MEMBERS))) {
            ps.setObject(1, joinId);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    members.add(member(rs));
                }
            }
        }
        return members;
    }

    private static JoinView.Member member(ResultSet rs) throws SQLException {
        return new JoinView.Member(new MessageId(rs.getObject(1, UUID.class)),
                JoinMemberState.valueOf(rs.getString(2)), rs.getBoolean(3), rs.getObject(4, OffsetDateTime.class),
                rs.getObject(5, OffsetDateTime.class));
    }
}
