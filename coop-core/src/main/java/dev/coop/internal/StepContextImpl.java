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
    final List<Emission> scoped = new ArrayList<>();
    final List<Emission> global = new ArrayList<>();

    StepContextImpl(ClaimedRun run, String step, P payload, String engineId, Connection connection,
            Json json) {
        this.run = run;
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
        if (topic == null) {
            throw new IllegalArgumentException("topic is null");
        }
        UUID id = Uuids.v7();
        into.add(new Emission(id, topic.name(), json.writePayload(topic, payload)));
        return new MessageId(id);
    }

    /** Ends the step: the connection handed out can no longer be used. */
    void close() {
        guard.close();
    }
}
