package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.inspect.Outcome;
import dev.coop.test.Await;
import dev.coop.test.Invariants;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;

/**
 * The scenes of {@link StepRoundCountOffTest}: parents whose children wait, all due, for an engine's first claim (a
 * round of 8), the children's round, and what the parents then show.
 */
final class CountOffRounds {
    private CountOffRounds() {
    }

    /** A saga of one step that launches a child on {@code children} for each comma-separated element of its payload. */
    static Saga<String> parent(String name, Topic<String> children, boolean nextStep) {
        Saga.Builder<String> builder = Saga.on(Topic.of(name, String.class), name)
                .step("launch", step -> {
                    for (String child : step.payload().split(",")) {
                        step.launch(children, child);
                    }
                });
        if (nextStep) {
            builder.step("next", step -> {
            });
        }
        return builder.build();
    }

    /** A saga of one step that fails when its payload says so; it never uses its connection. */
    static Saga<String> child(String name) {
        return Saga.on(Topic.of(name, String.class), name)
                .step("work", step -> {
                    if (step.payload().equals("fail")) {
                        throw new IllegalStateException("this child fails");
                    }
                })
                .build();
    }

    /**
     * Registers {@code child}, then lets an engine with the {@code upper} sagas only run them until {@code waiting}
     * of them wait: their children are then due, unclaimed.
     */
    static Map<String, MessageId> parentsWaiting(DataSource dataSource, Saga<String> child, Saga<String> root,
            List<Saga<?>> upper, List<String> payloads, int waiting) {
        Coop.engine(dataSource).workers(1).clock(StepRoundTest.CLOCK).register(child).start().close();
        Map<String, MessageId> ids = new LinkedHashMap<>();
        CoopEngine.Builder builder = Coop.engine(dataSource).workers(1).clock(StepRoundTest.CLOCK);
        upper.forEach(builder::register);
        try (CoopEngine engine = builder.start()) {
            for (String payload : payloads) {
                ids.put(payload, engine.client().launch(root.topic(), payload));
            }
            Await.until("the parents wait for their children", StepRoundTest.WAIT, () -> count(dataSource,
                    "SELECT count(*) FROM coop.run WHERE status = 'WAITING' AND saga = ANY(?)",
                    upper.stream().map(Saga::name).toArray(String[]::new)) == waiting);
        }
        return ids;
    }

    /** Runs the children's round on an engine with their saga only; returns the SQL it prepared. */
    static List<String> childrenRound(DataSource dataSource, Saga<String> child, int maxRuns) {
        List<String> sent = new CopyOnWriteArrayList<>();
        StepRoundTest.Rounds rounds = new StepRoundTest.Rounds();
        try (CoopEngine engine = Coop.engine(RecordingDataSource.of(dataSource, sent)).workers(1)
                .maxRunsPerTransaction(maxRuns)
                .pollInterval(Duration.ofMillis(100)).clock(StepRoundTest.CLOCK).listener(rounds).register(child)
                .start()) {
            Await.until("the children finished", StepRoundTest.WAIT,
                    () -> count(dataSource, "SELECT count(*) FROM coop.run"
                            + " WHERE saga = ? AND status NOT IN ('COMMITTED', 'ROLLED_BACK', 'ROLLBACK_FAILED')",
                            child.name()) == 0);
        }
        if (maxRuns > 1) {
            assertThat(rounds.first()).as("one round of 8").containsExactly(8, 8);
        }
        return sent;
    }

    /** The parent's row as the count-offs left it: status, pending and failed children, version. */
    static String row(DataSource dataSource, MessageId message) throws SQLException {
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "SELECT status, pending_children, failed_children, version, finished_at IS NOT NULL,"
                                + " runnable_at IS NOT NULL FROM coop.run WHERE message_id = ?")) {
            ps.setObject(1, message.value());
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getString(1) + " pending=" + rs.getInt(2) + " failed=" + rs.getInt(3) + " version="
                        + rs.getInt(4) + " finished=" + rs.getBoolean(5) + " due=" + rs.getBoolean(6);
            }
        }
    }

    /** The log of the run of {@code message}: each event's type and step. */
    static List<String> log(CoopClient client, MessageId message) {
        return client.events(message).stream().filter(e -> e.messageId().equals(message))
                .map(e -> e.type() + " " + e.step()).toList();
    }

    /** For each parent: its row now (its version as the change since {@code versions}), its log and its outcome. */
    static Map<String, String> outcomes(DataSource dataSource, Map<String, MessageId> ids,
            Map<String, Integer> versions, Saga<String> parent, Saga<String> child) throws SQLException {
        Map<String, String> result = new LinkedHashMap<>();
        for (var e : ids.entrySet()) {
            String row = row(dataSource, e.getValue());
            result.put(e.getKey(), row.replace("version=" + version(row),
                    "version+" + (version(row) - versions.get(e.getKey()))));
        }
        try (CoopEngine engine = Coop.engine(dataSource).workers(1).clock(StepRoundTest.CLOCK).register(parent)
                .register(child).start()) {
            for (var e : ids.entrySet()) {
                Outcome outcome = engine.client().awaitCompletion(e.getValue(), StepRoundTest.WAIT);
                Invariants.assertAll(engine.client().events(e.getValue()));
                result.merge(e.getKey(), " " + log(engine.client(), e.getValue()) + " " + outcome, String::concat);
            }
        }
        return result;
    }

    static int version(String row) {
        return Integer.parseInt(row.replaceAll(".*version=(\\d+).*", "$1"));
    }

    static int count(DataSource dataSource, String sql, Object value) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            if (value instanceof String[] values) {
                ps.setArray(1, c.createArrayOf("text", values));
            } else {
                ps.setObject(1, value);
            }
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
