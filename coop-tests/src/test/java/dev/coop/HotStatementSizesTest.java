package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.coop.Payloads.Empty;
import dev.coop.inspect.Outcome;
import dev.coop.test.CoopDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The statements of a W1 saga's launch and claims stay small (issue 37, decision 3): what executor start-up
 * initialises per execution grows with a plan's nodes and the relations it names. The statements are recorded as
 * the client and the engine send them, each statement of a multi-statement text explained as its generic plan
 * ({@code EXPLAIN (GENERIC_PLAN)}, PostgreSQL 16 and later), and counted as coop-bench's PlanSizes counts them. The
 * bounds are generous (about twice what is measured): they catch a statement that grows back into a big CTE, not a
 * node more or less. Every figure is printed.
 */
class HotStatementSizesTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Topic<Empty> TOPIC = Topic.of("sizes-w1", Empty.class);
    static final ObjectMapper JSON = new ObjectMapper();

    /** One statement's plan: its nodes and the distinct tables and indexes it names. */
    record Size(int nodes, Set<String> relations) {
    }

    @Test
    void a_w1_sagas_launch_and_claims_are_small_plans(DataSource dataSource) throws Exception {
        List<String> sent = new CopyOnWriteArrayList<>();
        DataSource recording = RecordingDataSource.of(dataSource, sent);
        Saga<Empty> saga = Saga.on(TOPIC, "sizes-w1-saga").step("s0", step -> {
        }).step("s1", step -> {
        }).step("s2", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(recording).workers(1).register(saga).start()) {
            for (int i = 0; i < 3; i++) { // the first saga prepares; count the last one
                sent.clear();
                MessageId id = engine.client().launch(TOPIC, new Empty());
                assertThat(engine.client().awaitCompletion(id, Duration.ofSeconds(20))).isEqualTo(Outcome.COMMITTED);
            }
        }
        System.out.println("statements sent for one W1 saga (launch, claims, advances): " + sent.size());
        // a round (runs due before the engine starts: claimed in the one statement) and a parent claimed again after
        // its child (the claim's other completing statements)
        Topic<Empty> child = Topic.of("sizes-child", Empty.class);
        Saga<Empty> parent = Saga.on(Topic.of("sizes-parent", Empty.class), "sizes-parent-saga")
                .step("p0", step -> step.launch(child, new Empty())).step("p1", step -> {
                }).build();
        Saga<Empty> children = Saga.on(child, "sizes-child-saga").step("c0", step -> {
        }).build();
        CoopClient client = Coop.client(dataSource);
        List<MessageId> due = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            due.add(client.launch(TOPIC, new Empty()));
        }
        try (CoopEngine engine = Coop.engine(recording).workers(2).register(saga).register(parent)
                .register(children).start()) {
            for (MessageId id : due) {
                assertThat(engine.client().awaitCompletion(id, Duration.ofSeconds(20))).isEqualTo(Outcome.COMMITTED);
            }
            MessageId id = engine.client().launch(Topic.of("sizes-parent", Empty.class), new Empty());
            assertThat(engine.client().awaitCompletion(id, Duration.ofSeconds(20))).isEqualTo(Outcome.COMMITTED);
        }
        Map<String, Size> launch = new LinkedHashMap<>();
        Map<String, Size> claim = new LinkedHashMap<>();
        Map<String, Size> reclaim = new LinkedHashMap<>();
        Map<String, Size> round = new LinkedHashMap<>();
        for (String text : new TreeSet<>(sent)) {
            for (String statement : statements(text)) {
                if (statement.contains("FOR UPDATE SKIP LOCKED") && statement.contains("LIMIT ?")) {
                    round.put(statement, size(dataSource, statement));
                } else if (statement.contains("INSERT INTO coop.message")) {
                    launch.put(statement, size(dataSource, statement));
                } else if (statement.contains("FOR UPDATE SKIP LOCKED") && statement.contains("r.saga = ?")
                        || statement.contains("FROM coop.message m")
                        || statement.contains("JOIN coop.message m")) { // the claim's lock, and what completes it
                    claim.put(statement, size(dataSource, statement));
                } else if (statement.contains("FOR UPDATE SKIP LOCKED") && statement.contains("r.version = ?")) {
                    reclaim.put(statement, size(dataSource, statement));
                }
            }
        }
        print("launch", launch);
        print("claim", claim);
        print("reclaim of a continuation", reclaim);
        print("a round's claim", round);
        assertThat(launch).as("the launch's statements").isNotEmpty();
        assertThat(claim).as("the claim's locking statement").isNotEmpty();
        assertThat(reclaim).as("the reclaim of a continuation").isNotEmpty();
        launch.forEach((sql, s) -> assertThat(s.nodes()).as("plan nodes of %s", sql).isLessThanOrEqualTo(24));
        launch.forEach((sql, s) -> assertThat(s.relations()).as("relations of %s", sql).hasSizeLessThanOrEqualTo(8));
        assertThat(claim).as("the claim's lock and the statements that complete it: SEEN, the step log")
                .hasSizeGreaterThanOrEqualTo(3);
        assertThat(round).as("a round's claim").isNotEmpty();
        // (a reclaim by id, sent when a continuation's slim reclaim does not apply, keeps the one statement)
        assertThat(claim.keySet()).as("no claim by saga of one run of a saga without limits calls seen_missing")
                .noneMatch(sql -> sql.contains("seen_missing("));
        claim.forEach((sql, s) -> assertThat(s.nodes()).as("plan nodes of %s", sql).isLessThanOrEqualTo(14));
        claim.forEach((sql, s) -> assertThat(s.relations()).as("relations of %s", sql).hasSizeLessThanOrEqualTo(6));
        // a round's claim is the one big statement: measured cheaper than two per round once several runs are locked
        round.forEach((sql, s) -> assertThat(s.nodes()).as("plan nodes of %s", sql).isLessThanOrEqualTo(36));
        round.forEach((sql, s) -> assertThat(s.relations()).as("relations of %s", sql).hasSizeLessThanOrEqualTo(9));
        reclaim.forEach((sql, s) -> assertThat(s.nodes()).as("plan nodes of %s", sql).isLessThanOrEqualTo(10));
        reclaim.forEach((sql, s) -> assertThat(s.relations()).as("relations of %s", sql).hasSizeLessThanOrEqualTo(4));
    }

    private static void print(String what, Map<String, Size> sizes) {
        sizes.forEach((sql, s) -> System.out.printf("%s: %d plan nodes, %d relations %s%n%s%n%n", what, s.nodes(),
                s.relations().size(), s.relations(), sql));
    }

    /** The statements of a text the engine sends (a multi-statement text: its statements), without COMMIT and BEGIN. */
    static List<String> statements(String text) {
        List<String> out = new ArrayList<>();
        for (String part : text.split(";\\s*(\\n|$)")) {
            String s = part.strip();
            if (!s.isEmpty() && !s.equalsIgnoreCase("COMMIT") && !s.equalsIgnoreCase("BEGIN")) {
                out.add(s);
            }
        }
        return out;
    }

    /** The generic plan of {@code sql} (its {@code ?} parameters numbered), counted. */
    static Size size(DataSource dataSource, String sql) throws SQLException, java.io.IOException {
        Matcher m = Pattern.compile("\\?").matcher(sql);
        StringBuilder numbered = new StringBuilder();
        int n = 0;
        while (m.find()) {
            m.appendReplacement(numbered, "\\$" + ++n);
        }
        m.appendTail(numbered);
        String plan;
        java.util.Properties p = new java.util.Properties();
        p.setProperty("user", db.server().user());
        p.setProperty("password", db.server().password());
        p.setProperty("preferQueryMode", "simple"); // the $n are the plan's parameters, not the driver's
        try (Connection c = java.sql.DriverManager.getConnection(db.jdbcUrl(), p); Statement st = c.createStatement()) {
            c.setAutoCommit(false);
            try (ResultSet rs = st.executeQuery("EXPLAIN (GENERIC_PLAN, VERBOSE, FORMAT JSON) " + numbered)) {
                rs.next();
                plan = rs.getString(1);
            }
            c.rollback();
        }
        Set<String> relations = new TreeSet<>();
        int nodes = count(JSON.readTree(plan).get(0).get("Plan"), relations);
        return new Size(nodes, relations);
    }

    private static int count(JsonNode node, Set<String> relations) {
        if (node.has("Relation Name")) {
            relations.add(node.get("Relation Name").asText());
        }
        if (node.has("Index Name")) {
            relations.add(node.get("Index Name").asText());
        }
        int n = 1;
        JsonNode plans = node.get("Plans");
        if (plans != null) {
            for (JsonNode child : plans) {
                n += count(child, relations);
            }
        }
        return n;
    }
}
