package dev.coop.internal.store;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The launch of messages without keys on Citus ({@link SchemaName#citus()}): plain PostgreSQL's {@link EmitSql#EMIT}
 * and {@link EmitSql#EMIT_ONE} read their input from {@code unnest(...)} and their sagas from {@code
 * saga_registration} (a reference table) inside {@code INSERT ... SELECT}s, which Citus runs through the coordinator
 * and commits in two phases. Here the topics' sagas are read first (one statement, the coordinator's copy of the
 * reference table), then each hierarchy's messages, EMITTED events and runs are one statement of {@code INSERT ...
 * VALUES} with every row bound, the root in each: Citus routes it to the hierarchy's shard, evaluates the defaults
 * ({@code event_id_seq}) on the coordinator in the rows' order, and the transaction commits in one phase when it
 * wrote no other worker. Messages in a scope share its root: one statement. On the global scope each message is a
 * root of its own: a statement each, on as many shards, and a step that launches there commits in two phases (the
 * design: another hierarchy). A topic nobody handles writes its message and event only (no {@code runs} at all).
 * No wake-up CTE: on Citus notifications are off ({@code notify_off}), engines poll.
 */
final class CitusEmits {
    /** The sagas registered for the topics, one statement for the launch. */
    static final String REGISTERED = "SELECT topic, saga, version FROM {schema}.saga_registration"
            + " WHERE topic = ANY(?::text[]) ORDER BY topic, saga";

    private static final String MESSAGE_ROW = "(?::uuid, ?, ?::jsonb, {now}, ?::uuid)";
    private static final String EMITTED_ROW = "(?::uuid, 'EMITTED', ?, ?, ?, ?::uuid[], ?, ?::uuid)";
    private static final String RUN_ROW = "(?::uuid, ?::uuid, ?, ?::int, ?::uuid[], ?::uuid, ?::int, 'RUNNABLE', ?,"
            + " coalesce(?::timestamptz, {now}), ?::int, ?::int, ?::uuid)";

    private final SchemaName schema;
    private final Time time;
    /** The statements as sent, by number of messages and of runs. */
    private final ConcurrentHashMap<Long, String> sql = new ConcurrentHashMap<>();

    CitusEmits(SchemaName schema, Time time) {
        this.schema = schema;
        this.time = time;
    }

    /**
     * Writes the messages (none with an idempotency or ordering key), their EMITTED events and their runs; adds the
     * topics nobody handles to {@code unhandled}.
     *
     * @return the sagas that got new runs, with how many each
     */
    Map<String, Integer> emit(Connection c, Emits.Origin origin, List<Emission> emissions, List<String> unhandled)
            throws SQLException {
        Map<String, List<String[]>> sagas = registered(c, emissions);
        Map<UUID, List<Emission>> byRoot = new LinkedHashMap<>();
        for (Emission e : emissions) {
            byRoot.computeIfAbsent(origin.root(e.messageId()), r -> new ArrayList<>()).add(e);
        }
        Map<String, Integer> created = new HashMap<>();
        for (Map.Entry<UUID, List<Emission>> hierarchy : byRoot.entrySet()) {
            emit(c, origin, hierarchy.getKey(), hierarchy.getValue(), sagas, created);
        }
        emissions.stream().map(Emission::topic).distinct().filter(t -> sagas.get(t).isEmpty()).forEach(unhandled::add);
        return created;
    }

    /** The sagas (name, version) registered for each topic of the launch, in the order of their names. */
    private Map<String, List<String[]>> registered(Connection c, List<Emission> emissions) throws SQLException {
        Map<String, List<String[]>> sagas = new HashMap<>();
        emissions.forEach(e -> sagas.putIfAbsent(e.topic(), new ArrayList<>()));
        try (PreparedStatement ps = c.prepareStatement(schema.sql(REGISTERED))) {
            ps.setArray(1, c.createArrayOf("text", sagas.keySet().toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    sagas.get(rs.getString(1)).add(new String[]{rs.getString(2), Integer.toString(rs.getInt(3))});
                }
            }
        }
        return sagas;
    }

    /** One hierarchy's messages in one statement. */
    private void emit(Connection c, Emits.Origin origin, UUID root, List<Emission> emissions,
            Map<String, List<String[]>> sagas, Map<String, Integer> created) throws SQLException {
        int runs = emissions.stream().mapToInt(e -> sagas.get(e.topic()).size()).sum();
        String text = sql.computeIfAbsent(((long) emissions.size() << 32) | runs,
                k -> schema.sql(statement(emissions.size(), runs)));
        try (PreparedStatement ps = c.prepareStatement(text)) {
            OffsetDateTime now = time.bind();
            int i = 0;
            for (Emission e : emissions) {
                ps.setObject(++i, e.messageId());
                ps.setString(++i, e.topic());
                ps.setString(++i, e.payload());
                ps.setObject(++i, now);
                ps.setObject(++i, root);
            }
            for (Emission e : emissions) {
                ps.setObject(++i, e.messageId());
                ps.setString(++i, origin.saga());
                ps.setString(++i, origin.engine());
                ps.setString(++i, origin.step());
                ps.setArray(++i, c.createArrayOf("uuid", scope(origin, e)));
                ps.setString(++i, e.context());
                ps.setObject(++i, root);
            }
            for (Emission e : emissions) {
                for (String[] saga : sagas.get(e.topic())) {
                    i = bindRun(c, ps, i, origin, e, saga, now, root);
                }
            }
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    created.merge(rs.getString(1), rs.getInt(2), Integer::sum);
                }
            }
        }
    }

    private static int bindRun(Connection c, PreparedStatement ps, int i, Emits.Origin origin, Emission e,
            String[] saga, OffsetDateTime now, UUID root) throws SQLException {
        UUID id = Uuids.v7();
        UUID[] scope = scope(origin, e);
        UUID[] lineage = java.util.Arrays.copyOf(scope, scope.length + 1); // as EMIT: the scope, then the run
        lineage[scope.length] = id;
        ps.setObject(++i, id);
        ps.setObject(++i, e.messageId());
        ps.setString(++i, saga[0]);
        ps.setInt(++i, Integer.parseInt(saga[1]));
        ps.setArray(++i, c.createArrayOf("uuid", lineage));
        return Emits.bindRunTail(ps, i, origin, e, now, root);
    }

    /** The lineage of a message's EMITTED event: the emitting run's, or the message alone on the global scope. */
    private static UUID[] scope(Emits.Origin origin, Emission e) {
        return origin.scope() == null ? new UUID[]{e.messageId()} : origin.scope();
    }

    /**
     * The statement of {@code messages} messages of one hierarchy and their {@code runs} runs: what {@link
     * EmitSql#EMIT} writes for them, each table's rows as {@code VALUES}; returns a row per saga with its runs.
     */
    static String statement(int messages, int runs) {
        String sql = """
                WITH msg AS (
                  INSERT INTO {schema}.message (id, topic, payload, created_at, root_id)
                  VALUES {messages}
                ), emitted AS (
                  INSERT INTO {schema}.event (message_id, type, saga, engine, step, lineage, context, root_id)
                  VALUES {emitted}
                )""".replace("{messages}", rows(MESSAGE_ROW, messages)).replace("{emitted}",
                rows(EMITTED_ROW, messages));
        if (runs == 0) { // nobody handles these topics: their messages and events only
            return sql + "\nSELECT NULL::text, 0 WHERE false\n";
        }
        return sql + """
                , runs AS (
                  INSERT INTO {schema}.run (id, message_id, saga, saga_version, lineage, parent_id, parent_seq, status,
                                            context, runnable_at, priority, cancel_from, root_id)
                  VALUES {runs}
                  RETURNING saga
                )
                SELECT saga, count(*)::int FROM runs GROUP BY saga
                """.replace("{runs}", rows(RUN_ROW, runs));
    }

    private static String rows(String row, int n) {
        return String.join(",\n         ", Collections.nCopies(n, row));
    }
}
