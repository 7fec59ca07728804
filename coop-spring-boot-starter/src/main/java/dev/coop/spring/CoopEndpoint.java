package dev.coop.spring;

import dev.coop.CoopClient;
import dev.coop.inspect.ParkedRun;
import dev.coop.inspect.RunQuery;
import dev.coop.inspect.RunSummary;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;

/** The Actuator endpoint {@code coop}: the engine, counts of unfinished runs, the newest runs and the parked runs. */
@Endpoint(id = "coop")
public class CoopEndpoint {
    private static final int LIMIT = 50;

    private final CoopClient client;
    private final CoopEngineLifecycle engine;

    public CoopEndpoint(CoopClient client, CoopEngineLifecycle engine) {
        this.client = client;
        this.engine = engine;
    }

    @ReadOperation
    public Map<String, Object> coop() {
        Map<String, Object> out = new LinkedHashMap<>();
        if (engine != null) {
            out.put("engine", engine.engine().map(e -> e.id()).orElse(null));
            out.put("sagas", engine.sagas());
        }
        Map<String, Long> counts = new LinkedHashMap<>();
        client.unfinishedRuns().forEach((status, n) -> counts.put(status.name(), n));
        out.put("unfinishedRuns", counts);
        out.put("recentRuns", client.runs(RunQuery.newest().limit(LIMIT)).stream().map(CoopEndpoint::run).toList());
        out.put("parkedRuns", client.parkedRuns(LIMIT).stream().map(CoopEndpoint::parked).toList());
        return out;
    }

    private static Map<String, Object> run(RunSummary r) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("runId", r.runId().toString());
        m.put("messageId", r.messageId().toString());
        m.put("topic", r.topic());
        m.put("saga", r.saga());
        m.put("status", r.status().name());
        m.put("createdAt", r.createdAt() == null ? null : r.createdAt().toString());
        m.put("finishedAt", r.finishedAt() == null ? null : r.finishedAt().toString());
        m.put("failure", r.failureMessage());
        return m;
    }

    private static Map<String, Object> parked(ParkedRun r) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("runId", r.runId().toString());
        m.put("messageId", r.messageId().toString());
        m.put("saga", r.saga());
        m.put("stepIndex", r.stepIndex());
        m.put("attempt", r.attempt());
        m.put("failure", r.failure() == null ? null : r.failure().message());
        m.put("createdAt", r.createdAt() == null ? null : r.createdAt().toString());
        return m;
    }
}
