package dev.coop.internal.step;

import dev.coop.internal.store.ClaimedRun;
import dev.coop.internal.guard.GuardedConnection;
import dev.coop.internal.store.Emission;
import dev.coop.internal.store.Uuids;

import dev.coop.CooperationContext;
import dev.coop.LaunchOptions;
import dev.coop.MessageId;
import dev.coop.Topic;
import dev.coop.failure.CoopStoreException;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * What a step (or finally part, or child-failure handler) launches, held until its body returned: the messages in its
 * run's scope and those on the global scope, written together when it commits ({@link #write}).
 */
final class StepLaunches {
    /**
     * Who writes the launches: the run (its lineage and id), its saga, the part named in the EMITTED events, the
     * step instance whose children the runs in the run's scope are, and whether they are work of the run's rollback
     * (a finally part that runs as the run rolls back): a cancellation that rollback answers does not reach them.
     */
    record Origin(ClaimedRun run, String saga, String step, int parentSeq, boolean forRollback) {
        Origin(ClaimedRun run, String saga, String step, int parentSeq) {
            this(run, saga, step, parentSeq, false);
        }
    }

    final List<Emission> scoped = new ArrayList<>();
    final List<Emission> global = new ArrayList<>();
    private final EngineContext engine;
    private final GuardedConnection.Guard guard;

    StepLaunches(EngineContext engine, GuardedConnection.Guard guard) {
        this.engine = engine;
        this.guard = guard;
    }

    /**
     * Adds a launch to {@code into} ({@link #scoped} or {@link #global}), or returns the message already holding its
     * idempotency key.
     */
    <T> MessageId add(List<Emission> into, Topic<T> topic, T payload, CooperationContext childContext,
            LaunchOptions options) {
        String key = options.idempotencyKey().orElse(null);
        if (key != null) {
            UUID holder = keyHolder(topic, key);
            if (holder != null) {
                return new MessageId(holder);
            }
        }
        if (!engine.listeners().isEmpty()) {
            childContext = engine.listeners().launching(topic.name(), childContext);
        }
        engine.json().checkLaunchContext(childContext);
        UUID id = Uuids.v7();
        into.add(new Emission(id, topic.name(), engine.json().writePayload(topic, payload),
                engine.json().writeContext(childContext),
                options.at().map(at -> at.atOffset(java.time.ZoneOffset.UTC)).orElse(null), key,
                options.priority(), options.orderingKey().orElse(null), options.businessKey().orElse(null),
                options.tags()));
        return new MessageId(id);
    }

    /**
     * The message already holding an idempotency key: one this step launched, or one in the database. A launch of
     * the key that commits after this look-up makes this step's emit fail as database trouble ({@link
     * Store#KEY_TAKEN}); the step runs again and finds it here.
     */
    private UUID keyHolder(Topic<?> topic, String key) {
        for (List<Emission> launched : List.of(scoped, global)) {
            for (Emission e : launched) {
                if (key.equals(e.idempotencyKey()) && topic.name().equals(e.topic())) {
                    return e.messageId();
                }
            }
        }
        try {
            return engine.store().messageWithKey(guard.connection(), topic.name(), key);
        } catch (java.sql.SQLException e) {
            throw new CoopStoreException("Could not look up the idempotency key '" + key
                    + "' of topic '" + topic.name() + "': " + e.getMessage(), e);
        }
    }

    /**
     * Writes what was launched: the runs in the run's scope as children of step instance {@code origin.parentSeq()},
     * and those on the global scope; adds the sagas that got runs to {@code woken} (woken after the commit).
     *
     * @return how many runs in the run's scope were created (to wait for)
     */
    int write(Connection c, Origin origin, Collection<String> woken) throws SQLException {
        Map<String, Integer> runs = new java.util.HashMap<>();
        int children = writeCounted(c, origin, runs);
        woken.addAll(runs.keySet());
        return children;
    }

    /**
     * {@link #write} that adds to {@code runs} how many runs each saga got, so that exactly that many claims are owed
     * after the commit (a search would end with a claim that finds nothing).
     *
     * @return how many runs in the run's scope were created (to wait for)
     */
    int writeCounted(Connection c, Origin origin, Map<String, Integer> runs) throws SQLException {
        int children = 0;
        if (!scoped.isEmpty()) {
            Map<String, Integer> created = engine.store().emit(c, origin.run().lineage(), origin.run().id(),
                    origin.parentSeq(), origin.run().childCancelFrom(origin.forRollback()), origin.saga(),
                    engine.engineId(), origin.step(), scoped);
            children = created.values().stream().mapToInt(Integer::intValue).sum();
            created.forEach((saga, n) -> runs.merge(saga, n, Integer::sum));
        }
        if (!global.isEmpty()) {
            engine.store().emit(c, null, null, null, origin.saga(), engine.engineId(), origin.step(), global)
                    .forEach((saga, n) -> runs.merge(saga, n, Integer::sum));
        }
        return children;
    }

    /** Forgets every launch (the step failed). */
    void clear() {
        scoped.clear();
        global.clear();
    }
}
