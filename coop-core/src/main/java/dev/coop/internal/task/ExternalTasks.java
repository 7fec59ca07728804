package dev.coop.internal.task;

import dev.coop.internal.store.ClaimedRun;
import dev.coop.internal.store.InputLimits;
import dev.coop.internal.store.SchemaName;
import dev.coop.internal.store.AdvanceSql;
import dev.coop.internal.store.ChildRun;
import dev.coop.internal.store.Counted;
import dev.coop.internal.store.Time;

import dev.coop.RunStatus;
import dev.coop.TaskOptions;
import dev.coop.TaskState;
import dev.coop.failure.CoopValidationException;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.UUID;
import java.util.regex.Pattern;

/** Every statement of external tasks: opening them with a step, settling them, compensating them, reading them. */
public final class ExternalTasks {
    /** The failure type of a task the outside world failed. */
    public static final String FAILED_TYPE = "dev.coop.failure.ExternalTaskFailedException";
    private static final Pattern TOKEN = Pattern.compile(TaskOptions.TOKEN_PREFIX + "[A-Za-z0-9_-]{32}");
    private static final SecureRandom RANDOM = new SecureRandom();

    private final SchemaName schema;
    private final Time time;
    private final String settleByToken;
    private final String settleByKey;
    private final String settleAloneByToken;
    private final String settleAloneByKey;

    public ExternalTasks(SchemaName schema, Time time) {
        this.schema = schema;
        this.time = time;
        String countOff = AdvanceSql.countOffParentOf("(SELECT root_id FROM settled)",
                "(SELECT parent_id FROM settled)",
                "(SELECT " + AdvanceSql.parentScopeOf("s.lineage", "s.cancel_from") + " FROM settled s)",
                "AND (SELECT count(*) FROM logged) >= 0");
        if (!countOff.contains(AdvanceSql.COUNT_OFF_RESULT)) {
            throw new IllegalStateException("the count-off's result changed: " + countOff);
        }
        countOff = countOff.replace(AdvanceSql.COUNT_OFF_RESULT, """
                SELECT (SELECT count(*) FROM settled)::int, p.id, p.saga, p.status, p.message_id,
                       CASE WHEN p.awaited THEN p.parent_id END, (SELECT message_id FROM settled), p.root_id,
                       p.lineage, p.cancel_from
                  FROM (SELECT 1) one LEFT JOIN parent p ON true CROSS JOIN parent_woken""");
        String settle = TaskSql.SETTLE.replace("{countOff}", countOff);
        this.settleByToken = schema.sql(settle.replace("{alone}", "").formatted(TaskSql.BY_TOKEN));
        this.settleByKey = schema.sql(settle.replace("{alone}", "").formatted(TaskSql.BY_KEY));
        this.settleAloneByToken = schema.sql(settle.replace("{alone}", TaskSql.ALONE).formatted(TaskSql.BY_TOKEN));
        this.settleAloneByKey = schema.sql(settle.replace("{alone}", TaskSql.ALONE).formatted(TaskSql.BY_KEY));
    }

    /** A new token: {@code ct_} and 32 URL-safe characters (192 random bits). */
    public static String newToken() {
        byte[] bytes = new byte[24];
        RANDOM.nextBytes(bytes);
        return TaskOptions.TOKEN_PREFIX + Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
    }

    /** How a caller named a task: a token, or else a correlation key; refuses what can be neither. */
    record Address(String value, boolean token) {
    }

    static Address address(String tokenOrKey) {
        if (tokenOrKey == null) {
            throw new CoopValidationException("tokenOrKey must not be null");
        }
        if (tokenOrKey.startsWith(TaskOptions.TOKEN_PREFIX)) {
            if (!TOKEN.matcher(tokenOrKey).matches()) {
                throw new CoopValidationException("Malformed external task token (expected '"
                        + TaskOptions.TOKEN_PREFIX + "' and 32 characters of [A-Za-z0-9_-], was "
                        + tokenOrKey.length() + " characters)");
            }
            return new Address(tokenOrKey, true);
        }
        return new Address(InputLimits.key("An external task's key", tokenOrKey), false);
    }

    /** What the step instance opening the tasks is. */
    public record Opener(ClaimedRun run, int seq, String step, String engine, String context, OffsetDateTime deadline) {
    }

    /**
     * Writes the tasks a step opened, in its transaction.
     *
     * @throws CoopValidationException when a key is held by an open task (the step then fails)
     */
    public int open(Connection c, Opener o, List<TaskRequest> tasks) throws SQLException {
        String[] results = new String[tasks.size()];
        int taken = takeSignals(c, tasks, results);
        if (schema.citus()) { // statements of one kind each: one phase (RootOpening)
            refuseHeld(new RootOpening(schema, time).open(c, o, tasks, results));
            return tasks.size() - taken;
        }
        try (PreparedStatement ps = c.prepareStatement(schema.sql(TaskSql.OPEN))) {
            bindOpener(c, ps, bindTasks(c, ps, tasks, results), o);
            List<String> keysTaken = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    keysTaken.add(rs.getString(1));
                }
            }
            refuseHeld(keysTaken);
            return tasks.size() - taken;
        }
    }

    private static void refuseHeld(List<String> keysHeld) {
        if (!keysHeld.isEmpty()) {
            throw new CoopValidationException("External task key(s) " + keysHeld
                    + " already held by an open task; a key addresses one open task at a time");
        }
    }

    /** Takes a kept signal for each task that waits for one ({@code results}); how many were taken. */
    private int takeSignals(Connection c, List<TaskRequest> tasks, String[] results) throws SQLException {
        int taken = 0;
        for (int k = 0; k < tasks.size(); k++) {
            if (tasks.get(k).signal()) {
                results[k] = takeSignal(c, tasks.get(k).key());
                taken += results[k] == null ? 0 : 1;
            }
        }
        return taken;
    }

    /** Binds the tasks' columns, one array each, to {@link TaskSql#OPEN}; returns the last index bound. */
    private static int bindTasks(Connection c, PreparedStatement ps, List<TaskRequest> tasks, String[] results)
            throws SQLException {
        int i = 0;
        ps.setArray(++i, c.createArrayOf("uuid", tasks.stream().map(TaskRequest::messageId).toArray()));
        ps.setArray(++i, c.createArrayOf("uuid", tasks.stream().map(TaskRequest::runId).toArray()));
        ps.setArray(++i, c.createArrayOf("text", tasks.stream().map(TaskRequest::name).toArray()));
        ps.setArray(++i, c.createArrayOf("text", tasks.stream().map(TaskRequest::payload).toArray()));
        ps.setArray(++i, c.createArrayOf("text", tasks.stream().map(TaskRequest::token).toArray()));
        ps.setArray(++i, c.createArrayOf("text", tasks.stream().map(TaskRequest::key).toArray()));
        ps.setArray(++i, c.createArrayOf("text", tasks.stream().map(TaskRequest::compensationTopic).toArray()));
        ps.setArray(++i, c.createArrayOf("text", tasks.stream().map(TaskRequest::compensationPayload).toArray()));
        ps.setArray(++i, c.createArrayOf("text", results));
        ps.setArray(++i, c.createArrayOf("timestamptz", tasks.stream().map(TaskRequest::timeoutAt).toArray()));
        return i;
    }

    /** Binds what the opening step instance gives {@link TaskSql#OPEN}, after index {@code i}. */
    private void bindOpener(Connection c, PreparedStatement ps, int i, Opener o) throws SQLException {
        OffsetDateTime now = time.bind();
        ps.setObject(++i, now); // message.created_at
        ps.setObject(++i, o.run().rootId()); // message.root_id
        var lineage = c.createArrayOf("uuid", o.run().lineage());
        ps.setString(++i, o.run().saga());
        ps.setString(++i, o.engine());
        ps.setString(++i, o.step());
        ps.setArray(++i, lineage);
        ps.setString(++i, o.context());
        ps.setObject(++i, o.run().rootId());
        ps.setArray(++i, lineage); // runs
        ps.setObject(++i, o.run().id());
        ps.setInt(++i, o.seq());
        ps.setString(++i, o.context());
        for (int k = 0; k < 3; k++) {
            ps.setObject(++i, now);
        }
        dev.coop.internal.store.Store.setInteger(ps, ++i, o.run().childCancelFrom(false)); // as the opener's
        ps.setObject(++i, o.run().rootId());
        ps.setArray(++i, lineage); // taken
        ps.setObject(++i, o.run().rootId());
        ps.setObject(++i, o.run().id()); // tasks
        ps.setInt(++i, o.seq());
        ps.setObject(++i, o.run().lineage()[0]);
        ps.setObject(++i, o.deadline());
        ps.setObject(++i, o.deadline());
        ps.setObject(++i, o.deadline());
        ps.setObject(++i, now);
        ps.setObject(++i, now);
    }

    /** What timing out a waiting parent's overdue tasks did: how many, and the next timeout (or null). */
    public record TimedOut(int count, OffsetDateTime next) {
    }

    /** Times out the open tasks of instance {@code seq} of {@code run} whose own timeout passed; see TIME_OUT. */
    public TimedOut timeOut(Connection c, ClaimedRun run, int seq, String engine) throws SQLException {
        if (schema.citus()) {
            return new RootTimeOut(schema).timeOut(c, run, seq, engine);
        }
        try (PreparedStatement ps = c.prepareStatement(schema.sql(TaskSql.TIME_OUT))) {
            OffsetDateTime now = run.claimedAt();
            int i = 0;
            ps.setObject(++i, run.id());
            ps.setInt(++i, seq);
            for (int k = 0; k < 3; k++) {
                ps.setObject(++i, now);
            }
            ps.setString(++i, engine);
            ps.setObject(++i, run.rootId());
            ps.setObject(++i, run.id());
            ps.setObject(++i, run.id());
            ps.setInt(++i, seq);
            ps.setObject(++i, now);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return new TimedOut(rs.getInt(1), rs.getObject(2, OffsetDateTime.class));
            }
        }
    }

    /** The oldest unexpired signal kept for {@code key} (JSON text), taken; null when none. */
    private String takeSignal(Connection c, String key) throws SQLException {
        lockSignalKey(c, key);
        try (PreparedStatement ps = c.prepareStatement(schema.sql(TaskSql.TAKE_SIGNAL))) {
            ps.setString(1, key);
            ps.setObject(2, time.bind());
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        }
    }

    /** The advisory lock of a signal key, held until the transaction ends. */
    void lockSignalKey(Connection c, String key) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(TaskSql.LOCK_SIGNAL_KEY)) {
            ps.setString(1, key);
            ps.executeQuery().close();
        }
    }

    /** Keeps a signal that no open task took, until {@code keepMillis} from now. */
    void keepSignal(Connection c, String key, String payload, String sender, long keepMillis) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(TaskSql.KEEP_SIGNAL))) {
            OffsetDateTime now = time.bind();
            ps.setObject(1, now);
            ps.setString(2, key);
            ps.setString(3, payload);
            ps.setString(4, sender);
            ps.setObject(5, now);
            ps.setObject(6, now);
            ps.setLong(7, keepMillis);
            ps.executeUpdate();
        }
    }

    /** Whether the task was settled, its message (when it was), and its parent as counted off (or null). */
    public record Settled(boolean settled, UUID message, Counted parent) {
    }

    /**
     * Settles the open task: completes it with {@code result} (JSON) or fails it with {@code failure} (a failure
     * document), in one statement.
     */
    public Settled settle(Connection c, String tokenOrKey, boolean complete, String result, String failure,
            String actor) throws SQLException {
        return settle(c, tokenOrKey, complete, result, failure, actor, false);
    }

    /**
     * The same, or with {@code alone}, nothing when the task's parent is in its last step ({@link TaskSql#ALONE}): a
     * settlement then needs nothing after its statement, which may commit on its own.
     */
    public Settled settle(Connection c, String tokenOrKey, boolean complete, String result, String failure,
            String actor, boolean alone) throws SQLException {
        Address address = address(tokenOrKey);
        String sql = alone
                ? (address.token() ? settleAloneByToken : settleAloneByKey)
                : (address.token() ? settleByToken : settleByKey);
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            OffsetDateTime now = time.bind();
            int i = 0;
            ps.setString(++i, address.value());
            ps.setString(++i, complete ? TaskState.COMPLETED.name() : TaskState.FAILED.name());
            ps.setObject(++i, now);
            ps.setString(++i, actor);
            RunStatus status = complete ? RunStatus.COMMITTED : RunStatus.ROLLED_BACK;
            ps.setString(++i, status.name());
            ps.setString(++i, complete ? "HAPPY" : "ROLLBACK");
            ps.setString(++i, result);
            ps.setString(++i, failure);
            ps.setObject(++i, now);
            ps.setObject(++i, now);
            ps.setArray(++i, c.createArrayOf("text", complete // a run's log starts with SEEN
                    ? new String[]{"SEEN", "COMMITTED"}
                    : new String[]{"SEEN", "ROLLING_BACK", "ROLLED_BACK"}));
            ps.setArray(++i, c.createArrayOf("text",
                    complete ? new String[]{null, null} : new String[]{null, failure, null}));
            for (int k = 0; k < 4; k++) {
                ps.setString(++i, status.name());
            }
            ps.setObject(++i, now);
            ps.setObject(++i, now);
            ps.setString(++i, null); // the engine of a parent committed here: none, a client did it
            ps.setObject(++i, now);
            ps.setString(++i, ""); // a client wakes nobody in-process: a parent woken here notifies its engines
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return settled(rs);
            }
        }
    }

    /** The row a settle statement returns: how many it settled, the parent counted off, the task's message. */
    private static Settled settled(ResultSet rs) throws SQLException {
        boolean settled = rs.getInt(1) > 0;
        UUID parent = rs.getObject(2, UUID.class);
        return new Settled(settled, rs.getObject(7, UUID.class), parent == null
                ? null
                : new Counted(parent, rs.getString(3),
                        RunStatus.valueOf(rs.getString(4)), rs.getObject(5, UUID.class),
                        rs.getObject(6, UUID.class), rs.getObject(8, UUID.class), Counted.lineage(rs, 9),
                        Counted.cancelFrom(rs, 10)));
    }

    /**
     * The runs of the external tasks named {@code name} that the newest of the given instances to open any opened (a
     * child-failure handler that opened a task again supersedes the step's).
     */
    public List<ChildRun> taskRuns(Connection c, UUID runId, int[] seqs, String name) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(schema.sql(TaskSql.TASK_RUNS))) {
            ps.setObject(1, runId);
            ps.setArray(2, c.createArrayOf("integer", Arrays.stream(seqs).boxed().toArray()));
            ps.setString(3, name);
            List<ChildRun> runs = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                int newest = -1;
                while (rs.next()) {
                    if (newest >= 0 && rs.getInt(7) != newest) {
                        break;
                    }
                    newest = rs.getInt(7);
                    runs.add(new ChildRun(rs.getObject(1, UUID.class), rs.getObject(2, UUID.class),
                            rs.getString(3), RunStatus.valueOf(rs.getString(4)), rs.getString(5), rs.getString(6)));
                }
            }
            return runs;
        }
    }
}
