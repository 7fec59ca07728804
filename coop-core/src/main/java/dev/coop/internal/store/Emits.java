package dev.coop.internal.store;

import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * The launch of messages: each message, its EMITTED event and one run per saga registered for its topic, in one
 * statement ({@link EmitSql#EMIT}, or {@link EmitSql#EMIT_ONE} for a single message without keys), then its business key and
 * tags where it has them.
 */
final class Emits {
    /**
     * Who launches: the emitting run's lineage (null for the global scope), the run and step instance its children
     * belong to (or nulls), the saga, engine and step named in the EMITTED events (or nulls), and the children's
     * {@code cancel_from} (null: from the root).
     */
    record Origin(UUID[] scope, UUID parentId, Integer parentSeq, String saga, String engine, String step,
            Integer cancelFrom) {
        /** The root of the hierarchy a message launched from here belongs to: the scope's, or its own (global). */
        UUID root(UUID messageId) {
            return scope == null ? messageId : scope[0];
        }

        /** The scope's root, or null on the global scope (each message is then its own root). */
        UUID scopeRoot() {
            return scope == null ? null : scope[0];
        }
    }

    private final SchemaName schema;
    private final Time time;

    private final String emitSql;
    private final String emitOneSql;
    private final String emitKeyedSql;
    /** On Citus: the launch of messages without keys as {@code INSERT ... VALUES}; null on plain PostgreSQL. */
    private final CitusEmits citusEmits;
    private final KeyedRuns keys;
    /** On Citus: idempotency keys through the coordinator's {@code launch_key}; null on plain PostgreSQL. */
    private final LaunchKeys launchKeys;

    private final boolean requireHandlers;
    private final String localSagas;
    /** Topics already warned about, per schema (bounded: a warning per topic is enough). */
    private static final java.util.Set<String> WARNED = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(Store.class);

    Emits(SchemaName schema, Time time, boolean requireHandlers, String localSagas) {
        this.schema = schema;
        this.time = time;
        this.requireHandlers = requireHandlers;
        this.localSagas = localSagas;
        this.emitSql = schema.sql(EmitSql.EMIT);
        this.emitOneSql = schema.sql(EmitSql.EMIT_ONE);
        this.emitKeyedSql = schema.sql(EmitSql.EMIT_KEYED);
        this.citusEmits = schema.citus() ? new CitusEmits(schema, time) : null;
        this.keys = new KeyedRuns(schema);
        this.launchKeys = schema.citus() ? new LaunchKeys(schema) : null;
    }

    /**
     * Writes messages, their EMITTED events and one run per saga registered for each topic.
     *
     * @param scope the emitting run's lineage, or null for messages on the global scope
     * @return the sagas that got new runs, with how many each; runs in {@code scope} are the parent's children
     * @throws SQLException with SQLSTATE {@value Store#KEY_TAKEN} when an emission's idempotency key was taken meanwhile
     *         by a transaction that committed after the caller looked it up: a retry finds the holder
     */
    Map<String, Integer> emit(Connection c, Origin origin, List<Emission> emissions) throws SQLException {
        Emitted emitted = emitAll(c, origin, emissions);
        if (!emitted.duplicates().isEmpty()) {
            Emission e = emissions.get(emitted.duplicates().get(0));
            throw new SQLException("The idempotency key '" + e.idempotencyKey() + "' of topic '" + e.topic()
                    + "' was taken by a launch that committed meanwhile", Store.KEY_TAKEN);
        }
        return emitted.created();
    }

    /** {@link #emitAll} of one message without keys: scalar parameters ({@link EmitSql#EMIT_ONE}). */
    private Emitted emitOne(Connection c, Origin origin, Emission e) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(emitOneSql)) {
            Array scopeArray = origin.scope() == null ? null : c.createArrayOf("uuid", origin.scope());
            OffsetDateTime now = time.bind();
            int i = 0;
            ps.setObject(++i, e.messageId());
            ps.setString(++i, e.topic());
            ps.setString(++i, e.payload());
            ps.setObject(++i, now);
            UUID root = origin.root(e.messageId());
            ps.setObject(++i, root);
            ps.setObject(++i, e.messageId());
            ps.setString(++i, origin.saga());
            ps.setString(++i, origin.engine());
            ps.setString(++i, origin.step());
            setArrayOrNull(ps, ++i, scopeArray);
            ps.setObject(++i, e.messageId());
            ps.setString(++i, e.context());
            ps.setObject(++i, root);
            i = bindRunOne(ps, i, origin, e, scopeArray, now, root);
            ps.setString(++i, e.topic());
            ps.setString(++i, localSagas);
            return emitted(ps, origin.saga(), origin.step(), e.topic());
        }
    }

    /** Binds the runs of {@link EmitSql#EMIT_ONE}, as the statement reads them from {@code saga_registration}. */
    private static int bindRunOne(PreparedStatement ps, int i, Origin origin, Emission e, Array scopeArray,
            OffsetDateTime now, UUID root) throws SQLException {
        ps.setObject(++i, e.messageId());
        setArrayOrNull(ps, ++i, scopeArray);
        ps.setObject(++i, e.messageId());
        return bindRunTail(ps, i, origin, e, now, root);
    }

    /**
     * Binds the columns of a run that follow its lineage, after parameter {@code i}: parent id, parent seq, context,
     * due (else {@code {now}}), priority, cancel from and root, as {@link EmitSql#RUNS_ONE} and {@link CitusEmits}'s
     * rows take them; returns the last.
     */
    static int bindRunTail(PreparedStatement ps, int i, Origin origin, Emission e, OffsetDateTime now, UUID root)
            throws SQLException {
        ps.setObject(++i, origin.parentId(), Types.OTHER);
        Store.setInteger(ps, ++i, origin.parentSeq());
        ps.setString(++i, e.context());
        ps.setObject(++i, e.due());
        ps.setObject(++i, now);
        ps.setInt(++i, e.priority());
        Store.setInteger(ps, ++i, origin.cancelFrom());
        ps.setObject(++i, root);
        return i;
    }

    /**
     * Reads what an emit statement returns: per saga the runs it got, {@code '#topic'} for a topic nobody handles,
     * {@code '!'} with the ordinal of a message whose idempotency key was taken.
     */
    private Emitted emitted(PreparedStatement ps, String saga, String step) throws SQLException {
        return emitted(ps, saga, step, null);
    }

    /** As {@link #emitted(PreparedStatement, String, String)}; no row at all means nobody handles {@code one}. */
    private Emitted emitted(PreparedStatement ps, String saga, String step, String one) throws SQLException {
        Map<String, Integer> created = new HashMap<>();
        List<String> unhandled = new ArrayList<>();
        List<Integer> duplicates = new ArrayList<>();
        try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                String name = rs.getString(1);
                if (name.equals("!")) {
                    duplicates.add(rs.getInt(2) - 1);
                } else if (name.startsWith("#")) {
                    unhandled.add(name.substring(1));
                } else {
                    created.put(name, rs.getInt(2));
                }
            }
        }
        if (one != null && created.isEmpty()) {
            unhandled.add(one); // EMIT_ONE: a topic nobody handles returns no row
        }
        unhandled(unhandled, saga, step);
        return new Emitted(created, duplicates);
    }

    /** Writes messages as {@link #emit}, reporting those whose idempotency key was taken instead of failing. */
    Emitted emitAll(Connection c, Origin origin, List<Emission> emissions) throws SQLException {
        if (schema.citus() && c.getAutoCommit() && emissions.stream()
                .anyMatch(e -> e.orderingKey() != null || e.idempotencyKey() != null)) {
            // on Citus a keyed launch writes its runs RUNNABLE before their turns or keys are settled on the
            // coordinator: in auto-commit (a client's launch without strict topics) one transaction all the same
            return Tx.inTransaction(c, t -> emitAll(t, origin, emissions));
        }
        Emitted emitted = emitUnlabelled(c, origin, emissions);
        if (emissions.stream().anyMatch(Emission::labelled)) {
            label(c, emissions);
        }
        return emitted;
    }

    /**
     * Business keys and tags (schema version 20), in a statement of their own that only launches carrying them pay
     * for. A message not written (its idempotency key was taken) is not found by its new id: nothing changes.
     */
    private void label(Connection c, List<Emission> emissions) throws SQLException {
        List<Emission> labelled = emissions.stream().filter(Emission::labelled).toList();
        try (PreparedStatement ps = c.prepareStatement(schema.sql("""
                UPDATE {schema}.message m
                   SET business_key = u.business_key,
                       tags = CASE WHEN u.tags IS NULL THEN NULL
                                   ELSE ARRAY(SELECT jsonb_array_elements_text(u.tags::jsonb)) END
                  FROM unnest(?::uuid[], ?::text[], ?::text[]) AS u(id, business_key, tags)
                 WHERE m.id = u.id
                """))) {
            ps.setArray(1, c.createArrayOf("uuid", labelled.stream().map(Emission::messageId).toArray()));
            ps.setArray(2, c.createArrayOf("text", labelled.stream().map(Emission::businessKey).toArray()));
            ps.setArray(3, c.createArrayOf("text", labelled.stream()
                    .map(e -> e.tags().isEmpty() ? null : Json.defaultMapper().valueToTree(e.tags()).toString())
                    .toArray()));
            ps.executeUpdate();
        }
    }

    private Emitted emitUnlabelled(Connection c, Origin origin, List<Emission> emissions) throws SQLException {
        if (citusEmits != null && emissions.stream().allMatch(e -> e.idempotencyKey() == null
                && e.orderingKey() == null)) { // on Citus: INSERT ... VALUES, routed by root (CitusEmits)
            List<String> unhandled = new ArrayList<>();
            Map<String, Integer> created = citusEmits.emit(c, origin, emissions, unhandled);
            unhandled(unhandled, origin.saga(), origin.step());
            return new Emitted(created, List.of());
        }
        if (emissions.size() == 1 && emissions.getFirst().idempotencyKey() == null
                && emissions.getFirst().orderingKey() == null) {
            return emitOne(c, origin, emissions.getFirst());
        }
        if (launchKeys != null && emissions.stream().anyMatch(e -> e.idempotencyKey() != null)) {
            return emitWithLaunchKeys(c, origin, emissions);
        }
        boolean keyed = KeyedRuns.keyed(emissions);
        if (keyed) {
            keys.lockForLaunch(c, emissions); // before the insert's snapshot
        }
        if (keyed && schema.citus()) { // the runs written RUNNABLE, then their turns on the coordinator
            Emitted emitted = emitMany(c, origin, emissions, false);
            keys.takeTurns(c, origin, emissions);
            return emitted;
        }
        Emitted emitted = emitMany(c, origin, emissions, keyed);
        if (keyed) {
            keys.releaseHeld(c, emissions);
        }
        return emitted;
    }

    /**
     * On Citus, a launch with idempotency keys ({@link LaunchKeys}): the keys taken on the coordinator first, then the
     * messages whose key this launch got; those whose key another message holds come back as duplicates, by their
     * ordinal in {@code emissions}.
     */
    private Emitted emitWithLaunchKeys(Connection c, Origin origin, List<Emission> emissions) throws SQLException {
        List<Integer> taken = launchKeys.take(c, origin, emissions);
        List<Emission> rest = new ArrayList<>();
        for (int i = 0; i < emissions.size(); i++) {
            if (!taken.contains(i)) {
                rest.add(emissions.get(i));
            }
        }
        if (rest.isEmpty()) {
            return new Emitted(Map.of(), taken);
        }
        boolean keyed = KeyedRuns.keyed(rest);
        if (keyed) {
            keys.lockForLaunch(c, rest);
        }
        Emitted emitted = emitMany(c, origin, rest, false);
        if (keyed) {
            keys.takeTurns(c, origin, rest);
        }
        return new Emitted(emitted.created(), taken);
    }

    private Emitted emitMany(Connection c, Origin origin, List<Emission> emissions, boolean keyed)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(keyed ? emitKeyedSql : emitSql)) {
            Array scopeArray = origin.scope() == null ? null : c.createArrayOf("uuid", origin.scope());
            ps.setObject(1, origin.scopeRoot(), Types.OTHER);
            int i = bindColumns(c, ps, emissions, 1);
            OffsetDateTime now = time.bind();
            ps.setObject(++i, now);
            ps.setString(++i, origin.saga());
            ps.setString(++i, origin.engine());
            ps.setString(++i, origin.step());
            setArrayOrNull(ps, ++i, scopeArray);
            setArrayOrNull(ps, ++i, scopeArray);
            ps.setObject(++i, origin.parentId(), Types.OTHER);
            if (origin.parentSeq() == null) {
                ps.setNull(++i, Types.INTEGER);
            } else {
                ps.setInt(++i, origin.parentSeq());
            }
            if (keyed) {
                setArrayOrNull(ps, ++i, scopeArray); // the ancestors a keyed run is not held behind
            }
            ps.setObject(++i, now);
            Store.setInteger(ps, ++i, origin.cancelFrom());
            ps.setString(++i, localSagas);
            return emitted(ps, origin.saga(), origin.step());
        }
    }

    /** Binds the messages of {@link EmitSql#EMIT} after parameter {@code from}, one array per column; returns the last. */
    private static int bindColumns(Connection c, PreparedStatement ps, List<Emission> emissions, int from)
            throws SQLException {
        int n = emissions.size();
        UUID[] ids = new UUID[n];
        String[] topics = new String[n];
        String[] payloads = new String[n];
        String[] contexts = new String[n];
        OffsetDateTime[] dues = new OffsetDateTime[n];
        String[] idempotencyKeys = new String[n];
        Integer[] priorities = new Integer[n];
        String[] orderingKeys = new String[n];
        for (int i = 0; i < n; i++) {
            Emission e = emissions.get(i);
            ids[i] = e.messageId();
            topics[i] = e.topic();
            payloads[i] = e.payload();
            contexts[i] = e.context();
            dues[i] = e.due();
            idempotencyKeys[i] = e.idempotencyKey();
            priorities[i] = e.priority();
            orderingKeys[i] = e.orderingKey();
        }
        int i = from;
        ps.setArray(++i, c.createArrayOf("uuid", ids));
        ps.setArray(++i, c.createArrayOf("text", topics));
        ps.setArray(++i, c.createArrayOf("text", payloads));
        ps.setArray(++i, c.createArrayOf("text", contexts));
        ps.setArray(++i, c.createArrayOf("timestamptz", dues));
        ps.setArray(++i, c.createArrayOf("text", idempotencyKeys));
        ps.setArray(++i, c.createArrayOf("integer", priorities));
        ps.setArray(++i, c.createArrayOf("text", orderingKeys));
        return i;
    }

    /** The message holding an idempotency key on a topic, or null (read with a new snapshot). */
    UUID messageWithKey(Connection c, String topic, String idempotencyKey) throws SQLException {
        if (launchKeys != null) {
            return launchKeys.holder(c, topic, idempotencyKey);
        }
        try (PreparedStatement ps = c.prepareStatement(schema.sql(
                "SELECT id FROM {schema}.message WHERE topic = ? AND idempotency_key = ?"))) {
            ps.setString(1, topic);
            ps.setString(2, idempotencyKey);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getObject(1, UUID.class) : null;
            }
        }
    }

    private static void setArrayOrNull(PreparedStatement ps, int index, Array array) throws SQLException {
        if (array == null) {
            ps.setNull(index, Types.ARRAY);
        } else {
            ps.setArray(index, array);
        }
    }

    private void unhandled(List<String> topics, String saga, String step) {
        if (topics.isEmpty()) {
            return;
        }
        String where = saga == null ? "" : " (launched by step '" + step + "' of saga '" + saga + "')";
        if (requireHandlers) {
            throw new dev.coop.failure.CoopValidationException("No saga is registered for topic" + (topics.size() == 1
                    ? " '" + topics.getFirst() + "'"
                    : "s " + topics) + where + "; nothing would handle the message (strict topics are on: check"
                    + " the topic's name, or register a saga for it first)");
        }
        for (String topic : topics) {
            if (WARNED.size() < 10_000 && WARNED.add(schema.value() + "." + topic)) {
                log.warn("No saga is registered for topic '{}'{}: its messages are stored, and nothing handles them"
                        + " (warned once per topic)", topic, where);
            }
        }
    }
}
