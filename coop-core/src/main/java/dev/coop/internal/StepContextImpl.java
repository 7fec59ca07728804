package dev.coop.internal;

import dev.coop.Lineage;
import dev.coop.MessageId;
import dev.coop.StepContext;
import dev.coop.Topic;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;

/** The context a step runs with; collects the messages the step launches until the step commits. */
final class StepContextImpl<P> implements StepContext<P> {
    private final ClaimedRun run;
    private final String step;
    private final P payload;
    private final String engineId;
    private final GuardedConnection.Guard guard;
    private final Json json;
    private final Store store;
    private final boolean launchAllowed;
    private volatile boolean ended;
    final List<Emission> scoped = new ArrayList<>();
    final List<Emission> global = new ArrayList<>();

    StepContextImpl(ClaimedRun run, String step, P payload, String engineId, Connection connection, Json json,
            Store store, boolean launchAllowed) {
        this.run = run;
        this.store = store;
        this.launchAllowed = launchAllowed;
        this.step = step;
        this.payload = payload;
        this.engineId = engineId;
        this.guard = GuardedConnection.wrap(connection);
        this.json = json;
    }

    @Override
    public P payload() {
        return payload;
    }

    @Override
    public MessageId messageId() {
        return new MessageId(run.messageId());
    }

    @Override
    public String saga() {
        return run.saga();
    }

    @Override
    public String step() {
        return step;
    }

    @Override
    public UUID runId() {
        return run.id();
    }

    @Override
    public Lineage lineage() {
        return new Lineage(Arrays.asList(run.lineage()));
    }

    @Override
    public int attempt() {
        return run.attempt();
    }

    @Override
    public void giveUpIfRequested() {
        if (!launchAllowed) {
            return; // a compensation: rollbacks are not cancellable, compensation always runs to the end
        }
        String cancellation;
        try {
            cancellation = store.cancellation(guard.connection(), run.lineage());
        } catch (java.sql.SQLException e) {
            throw new dev.coop.CoopStoreException("Could not check for a cancellation of run " + run.id(), e);
        }
        if (cancellation != null) {
            throw Failures.gaveUp(cancellation, run.saga() + "[" + engineId + "]");
        }
    }

    @Override
    public String engineId() {
        return engineId;
    }

    @Override
    public Connection connection() {
        return guard.connection();
    }

    @Override
    public <T> MessageId launch(Topic<T> topic, T payload) {
        return add(scoped, topic, payload);
    }

    @Override
    public <T> MessageId launchOnGlobalScope(Topic<T> topic, T payload) {
        return add(global, topic, payload);
    }

    private <T> MessageId add(List<Emission> into, Topic<T> topic, T payload) {
        java.util.Objects.requireNonNull(topic, "topic");
        if (ended) {
            throw new IllegalStateException("Step '" + step + "' of saga " + run.saga()
                    + " has ended; launch messages while the step runs");
        }
        if (!launchAllowed) {
            throw new IllegalStateException("A compensation cannot launch messages (saga " + run.saga() + ", step "
                    + step + ")");
        }
        UUID id = Uuids.v7();
        into.add(new Emission(id, topic.name(), json.writePayload(topic, payload)));
        return new MessageId(id);
    }

    /** Ends the step: the connection handed out can no longer be used. */
    void close() {
        ended = true;
        guard.close();
    }

    /** The step failed: undo its writes (and forget what it launched), keeping the transaction and its locks. */
    void discardWrites() throws java.sql.SQLException {
        scoped.clear();
        global.clear();
        guard.discardWrites();
    }
}
