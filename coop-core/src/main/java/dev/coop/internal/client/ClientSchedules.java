package dev.coop.internal.client;

import dev.coop.Topic;
import dev.coop.failure.CoopStoreException;
import dev.coop.internal.runtime.EngineRuntime;
import dev.coop.internal.schedule.Schedules;
import dev.coop.schedule.Schedule;
import dev.coop.schedule.ScheduleSummary;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.Objects;

/** A client's schedules: declared, removed and listed; a change wakes the schedule timer of this client's engine. */
public final class ClientSchedules {
    private final ClientContext client;
    private final Schedules schedules;

    public ClientSchedules(ClientContext client) {
        this.client = client;
        this.schedules = new Schedules(client.schema(), client.time());
    }

    public <P> ScheduleSummary schedule(String name, Topic<P> topic, P payload, Schedule schedule) {
        ScheduleSummary summary = client.inTransaction("schedule '" + name + "'",
                c -> schedule(c, name, topic, payload, schedule, false));
        client.localWake().accept(EngineRuntime.SCHEDULES_CHANGED, 0);
        return summary;
    }

    public <P> ScheduleSummary schedule(Connection connection, String name, Topic<P> topic, P payload,
            Schedule schedule) {
        Objects.requireNonNull(connection, "connection");
        try {
            return schedule(connection, name, topic, payload, schedule, true);
        } catch (SQLException e) {
            throw new CoopStoreException("Could not schedule '" + name + "': " + e.getMessage(), e);
        }
    }

    private <P> ScheduleSummary schedule(Connection c, String name, Topic<P> topic, P payload, Schedule schedule,
            boolean wake) throws SQLException {
        Schedules.validateName(name);
        Objects.requireNonNull(topic, "topic");
        Objects.requireNonNull(schedule, "schedule");
        ScheduleSummary summary = schedules.upsert(c, name, topic.name(), client.json().writePayload(topic, payload),
                schedule);
        if (wake) {
            client.localWake().accept(EngineRuntime.SCHEDULES_CHANGED, 0); // again at commit, by notification
        }
        return summary;
    }

    public void unschedule(String name) {
        client.inTransaction("unschedule '" + name + "'", c -> {
            schedules.delete(c, name);
            return null;
        });
    }

    public List<ScheduleSummary> schedules() {
        return client.inTransaction("list schedules", schedules::list);
    }
}
