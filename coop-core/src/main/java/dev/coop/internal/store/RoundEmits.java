package dev.coop.internal.store;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * The launches of a round's steps (runs of one saga, one step each) in one statement ({@link EmitSql#EMIT_ROUND}):
 * every message, its EMITTED event and its runs, whichever step launched it, then the business keys and tags of those
 * that carry them. Each step's part is what its own emit ({@link Emits}) writes; the per-statement cost is paid once
 * for the round. A step whose launches cannot be written as asked (an idempotency key taken meanwhile, a topic nobody
 * handles while strict topics are on) is named with the reason, for its caller to fail it.
 */
public final class RoundEmits {
    /**
     * What one step launched.
     *
     * @param scope the emitting run's lineage
     * @param runId the emitting run: the parent of the runs in its scope
     * @param parentSeq the step instance those runs are children of
     * @param step the part named in the EMITTED events
     * @param scoped the messages in the run's scope
     * @param global the messages on the global scope
     */
    public record Launch(UUID[] scope, UUID runId, int parentSeq, String step, List<Emission> scoped,
            List<Emission> global) {
    }

    /**
     * What was written for one step's launches.
     *
     * @param children how many runs in its run's scope were created (to wait for)
     * @param created the runs created in its run's scope, per saga
     * @param refused why its launches could not be written as asked (then the round must not commit), or null
     */
    public record Launched(int children, Map<String, Integer> created, Exception refused) {
    }

    /**
     * What the round's launches wrote: each step's part, in the order given, and the runs created on the global scope
     * per saga.
     */
    public record Written(List<Launched> launches, Map<String, Integer> global) {
    }

    private final Emits emits;
    private final String sql;
    private final Time time;
    private final String localSagas;

    RoundEmits(SchemaName schema, Time time, Emits emits, String localSagas) {
        this.emits = emits;
        this.sql = schema.sql(EmitSql.EMIT_ROUND);
        this.time = time;
        this.localSagas = localSagas;
    }

    /** Writes the launches of {@code launches}, made by steps of runs of {@code saga} on {@code engine}. */
    Written write(Connection c, String saga, String engine, List<Launch> launches) throws SQLException {
        Origins origins = new Origins(launches);
        Map<UUID, Map<String, Integer>> byParent = new HashMap<>();
        Map<String, Integer> global = new HashMap<>();
        Map<Integer, List<String>> unhandled = new HashMap<>();
        List<Integer> duplicates = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            int i = origins.bind(c, ps);
            i = Emits.bindColumns(c, ps, i, origins.emissions);
            ps.setArray(++i, c.createArrayOf("integer", origins.originOf.toArray()));
            ps.setObject(++i, time.bind());
            ps.setString(++i, saga);
            ps.setString(++i, engine);
            ps.setObject(++i, time.bind());
            ps.setString(++i, localSagas);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    String name = rs.getString(1);
                    if (name.equals("!")) {
                        duplicates.add(rs.getInt(3) - 1);
                    } else if (name.startsWith("#")) {
                        unhandled.computeIfAbsent(origins.launchOf.get(rs.getInt(3) - 1), k -> new ArrayList<>())
                                .add(name.substring(1));
                    } else {
                        UUID parent = rs.getObject(2, UUID.class);
                        (parent == null ? global : byParent.computeIfAbsent(parent, k -> new HashMap<>()))
                                .merge(name, rs.getInt(3), Integer::sum);
                    }
                }
            }
        }
        if (origins.emissions.stream().anyMatch(Emission::labelled)) {
            emits.label(c, origins.emissions);
        }
        return new Written(launched(launches, saga, origins, byParent, unhandled, duplicates), global);
    }

    private List<Launched> launched(List<Launch> launches, String saga, Origins origins,
            Map<UUID, Map<String, Integer>> byParent, Map<Integer, List<String>> unhandled, List<Integer> duplicates) {
        Exception[] refused = new Exception[launches.size()];
        for (int d : duplicates) {
            Emission e = origins.emissions.get(d);
            refused[origins.launchOf.get(origins.originOf.get(d) - 1)] = Emits.keyTaken(e);
        }
        List<Launched> result = new ArrayList<>(launches.size());
        for (int k = 0; k < launches.size(); k++) {
            Launch launch = launches.get(k);
            try {
                emits.unhandled(unhandled.getOrDefault(k, List.of()), saga, launch.step());
            } catch (RuntimeException e) { // strict topics: a topic nobody handles fails the step that launched it
                refused[k] = refused[k] == null ? e : refused[k];
            }
            Map<String, Integer> created = byParent.getOrDefault(launch.runId(), Map.of());
            int children = created.values().stream().mapToInt(Integer::intValue).sum();
            result.add(new Launched(children, created, refused[k]));
        }
        return result;
    }

    /**
     * The launches' origins (a step's scoped messages, and its global ones, are an origin each) and their messages,
     * with each message's origin ordinal and each origin's launch.
     */
    private static final class Origins {
        final List<String> scopes = new ArrayList<>();
        final List<UUID> parents = new ArrayList<>();
        final List<Integer> parentSeqs = new ArrayList<>();
        final List<String> steps = new ArrayList<>();
        final List<Integer> launchOf = new ArrayList<>();
        final List<Emission> emissions = new ArrayList<>();
        final List<Integer> originOf = new ArrayList<>();

        Origins(List<Launch> launches) {
            for (int k = 0; k < launches.size(); k++) {
                Launch launch = launches.get(k);
                add(k, RoundColumns.literal(launch.scope()), launch.runId(), launch.parentSeq(), launch.step(),
                        launch.scoped());
                add(k, null, null, null, launch.step(), launch.global());
            }
        }

        private void add(int launch, String scope, UUID parent, Integer parentSeq, String step,
                List<Emission> messages) {
            if (messages.isEmpty()) {
                return;
            }
            scopes.add(scope);
            parents.add(parent);
            parentSeqs.add(parentSeq);
            steps.add(step);
            launchOf.add(launch);
            for (Emission e : messages) {
                emissions.add(e);
                originOf.add(scopes.size()); // 1-based, as WITH ORDINALITY counts
            }
        }

        int bind(Connection c, PreparedStatement ps) throws SQLException {
            int i = 0;
            ps.setArray(++i, c.createArrayOf("text", scopes.toArray()));
            ps.setArray(++i, c.createArrayOf("uuid", parents.toArray()));
            ps.setArray(++i, c.createArrayOf("integer", parentSeqs.toArray()));
            ps.setArray(++i, c.createArrayOf("text", steps.toArray()));
            return i;
        }
    }
}
