package dev.coop.internal.client;

import dev.coop.CooperationContext;
import dev.coop.LaunchOptions;
import dev.coop.MessageId;
import dev.coop.Topic;
import dev.coop.failure.CoopStoreException;
import dev.coop.internal.Completions;
import dev.coop.internal.Listeners;
import dev.coop.internal.store.Emission;
import dev.coop.internal.store.Emitted;
import dev.coop.internal.store.Store;
import dev.coop.internal.store.Tx;
import dev.coop.internal.store.Uuids;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;

/** A client's launches: in a transaction of their own or in the caller's, idempotent by key. */
public final class Launches {
    private final ClientContext client;
    /** For launches in the client's own transaction, which wake the engine's sagas in-process after the commit. */
    private final Store launchStore;
    private final boolean requireHandlers;
    private final Completions completions;
    /** Whether this client learns the outcome of messages it launched from the engine it belongs to. */
    private final boolean inProcessOutcomes;
    private final Listeners listeners;

    public Launches(ClientContext client, Store launchStore, boolean requireHandlers, Completions completions,
            boolean inProcessOutcomes, Listeners listeners) {
        this.client = client;
        this.launchStore = launchStore;
        this.requireHandlers = requireHandlers;
        this.completions = completions;
        this.inProcessOutcomes = inProcessOutcomes;
        this.listeners = listeners;
    }

    /** The options of a launch with a context and a start time (null: at once). */
    public static LaunchOptions options(CooperationContext context, Instant at) {
        LaunchOptions options = LaunchOptions.none().context(Objects.requireNonNull(context, "context"));
        return at == null ? options : options.at(at);
    }

    /** Launches a message in its own transaction and wakes this engine's sagas that got a run. */
    public <P> MessageId launch(Topic<P> topic, P payload, LaunchOptions options) {
        Emission emission = emission(topic, payload, options);
        // one statement: without strict topics nothing can refuse it afterwards, so it commits by itself (one round
        // trip); strict topics check the result and roll the launch back when no saga handles the topic. A key taken
        // by another message is looked up by a second statement, which sees the holder: the emit waited for it
        UUID id = emission.messageId();
        if (inProcessOutcomes) {
            completions.track(id); // before the commit: its runs may finish here before launch returns
        }
        Launched launched;
        try {
            launched = commit("launch a message on topic '" + topic.name() + "'", emission);
        } catch (RuntimeException | Error e) {
            completions.untrack(id);
            throw e;
        }
        if (inProcessOutcomes) {
            if (launched.id().equals(id) && !launched.created().isEmpty()) {
                completions.launched(id, launched.created().keySet());
            } else {
                completions.untrack(id); // an idempotent launch found its key taken, or nobody handles the topic
            }
        }
        launched.created().forEach(client.localWake()::accept);
        return new MessageId(launched.id());
    }

    private Launched commit(String what, Emission emission) {
        Tx.Work<Launched> emit = c -> launch(c, launchStore, emission);
        return requireHandlers
                ? client.inTransaction(what, emit)
                : Tx.oneStatement(client.dataSource(), what, emit);
    }

    /** Launches a message inside the caller's transaction (the outbox pattern). */
    public <P> MessageId launch(Connection connection, Topic<P> topic, P payload, LaunchOptions options) {
        Objects.requireNonNull(connection, "connection");
        Emission emission = emission(topic, payload, options);
        try {
            return new MessageId(launch(connection, client.store(), emission).id());
        } catch (SQLException e) {
            throw new CoopStoreException("Could not launch a message on topic '" + topic.name() + "': "
                    + e.getMessage(), e);
        }
    }

    /** A launch's message (the one written, or the one holding its idempotency key) and the runs created. */
    private record Launched(UUID id, Map<String, Integer> created) {
    }

    private static Launched launch(Connection c, Store store, Emission emission) throws SQLException {
        for (int attempt = 0;; attempt++) {
            Emitted emitted = store.emitAll(c, null, null, null, null, null, null, List.of(emission));
            if (emitted.duplicates().isEmpty()) {
                return new Launched(emission.messageId(), emitted.created());
            }
            // the emit waited for a launch of the key in flight; this new statement sees it committed
            UUID holder = store.messageWithKey(c, emission.topic(), emission.idempotencyKey());
            if (holder != null || attempt == 2) {
                if (holder == null) {
                    throw new SQLException("The idempotency key '" + emission.idempotencyKey() + "' of topic '"
                            + emission.topic() + "' is held by a message that cannot be read", Store.KEY_TAKEN);
                }
                return new Launched(holder, Map.of());
            }
            // the holder was deleted (retention) between the two statements: launch again
        }
    }

    private <P> Emission emission(Topic<P> topic, P payload, LaunchOptions options) {
        Objects.requireNonNull(topic, "topic");
        Objects.requireNonNull(options, "options");
        CooperationContext context = options.context();
        if (!listeners.isEmpty()) {
            context = listeners.launching(topic.name(), context);
        }
        var json = client.json();
        json.checkLaunchContext(context);
        return new Emission(Uuids.v7(), topic.name(), json.writePayload(topic, payload),
                json.writeContext(context.withMapper(json.mapper())),
                options.at().map(at -> at.atOffset(ZoneOffset.UTC)).orElse(null),
                options.idempotencyKey().orElse(null), options.priority(), options.orderingKey().orElse(null),
                options.businessKey().orElse(null), options.tags());
    }
}
