package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.inspect.Outcome;
import dev.coop.test.CoopDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The statements of the advance, read as the engine sends them (recorded on its connections), one by one: no
 * {@code UPDATE} of a hot table ({@code run}, {@code event}, {@code message}, {@code cancellation}) calls a function
 * that a distributed PostgreSQL refuses there or that raises (issue 37, decision 5; docs/scaling.md): the claim's and
 * the cancellation's checks, the notifications and the key releases are {@code SELECT}s of their own in the same
 * round trip. Checked for every form the engine sends: a continuing and a finishing advance alone (quiet or not),
 * with its continuation's reclaim, with the join check, the count-off at a parent that stays waiting, wakes or commits
 * here, the count-off of that parent at its own parent, a keyed run, and a round's advances with and without
 * count-offs. The check reads a round trip's statements up to its {@code COMMIT}: what follows it (a continuation's
 * reclaim) is the claim's, not the advance's.
 */
class AdvanceStatementsTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    /** An update of a hot table, the first word of its statement or of a CTE's body. */
    static final Pattern HOT_UPDATE = Pattern.compile("(?is)\\bUPDATE\\s+coop\\.(run|event|message|cancellation)\\b");
    /** The functions no such statement may call. */
    static final Pattern CALLS = Pattern.compile("(?i)\\b(claim_lost|commit_allowed|assert_not_cancelled|pg_notify"
            + "|clock_timestamp|release_ordering_key_after)\\s*\\(");
    /** Where a round trip's statements end: at the semicolon that ends a line. */
    static final Pattern STATEMENT_END = Pattern.compile(";\\s*\\n");

    static final Topic<String> LEAF = Topic.of("stmt-leaf", String.class);
    static final Topic<String> MIDDLE = Topic.of("stmt-middle", String.class);
    static final Topic<String> TOP = Topic.of("stmt-top", String.class);
    static final Topic<String> PLAIN = Topic.of("stmt-plain", String.class);

    @Test
    void single_advances_update_hot_tables_without_function_calls(DataSource dataSource) {
        List<String> sent = new CopyOnWriteArrayList<>();
        Saga<String> leaf = Saga.on(LEAF, "stmt-leaf").step("a", step -> {
        }).step("b", step -> {
        }).build();
        Saga<String> middle = Saga.on(MIDDLE, "stmt-middle").step("launch", step -> {
            step.launch(LEAF, "1");
            step.launch(LEAF, "2");
        }).build(); // its last step: it commits when its last child counts off, and counts off at the top
        Saga<String> top = Saga.on(TOP, "stmt-top").step("launch", step -> step.launch(MIDDLE, "m"))
                .step("after", step -> {
                }).build();
        Saga<String> plain = Saga.on(PLAIN, "stmt-plain").step("s0", step -> {
        }).step("s1", step -> {
        }).step("s2", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(RecordingDataSource.of(dataSource, sent)).workers(2)
                .register(leaf).register(middle).register(top).register(plain).start()) {
            CoopClient client = engine.client();
            MessageId hierarchy = client.launch(TOP, "t");
            MessageId w1 = client.launch(PLAIN, "p");
            MessageId keyed = client.launch(PLAIN, "k", LaunchOptions.none().orderingKey("stmt-key"));
            MessageId keyedNext = client.launch(PLAIN, "k2", LaunchOptions.none().orderingKey("stmt-key"));
            for (MessageId id : List.of(hierarchy, w1, keyed, keyedNext)) {
                assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            }
        }
        List<String> advances = advances(sent);
        assertThat(advances).as("the advances sent").isNotEmpty();
        assertThat(offending(advances)).as("updates of hot tables that call a function").isEmpty();
        assertThat(String.join("\n", sent)).as("the count-off of a parent committed here at its own parent")
                .contains("commit_allowed(?::uuid, '{}'::uuid[], false)");
    }

    @Test
    void round_advances_update_hot_tables_without_function_calls(DataSource dataSource) {
        Saga<String> child = CountOffRounds.child("stmt-round-child");
        Topic<String> children = child.topic();
        Saga<String> parent = CountOffRounds.parent("stmt-round-parent", children, false);
        Map<String, MessageId> parents = CountOffRounds.parentsWaiting(dataSource, child, parent, List.of(parent),
                List.of("a,b", "c,d", "e,f", "g,h"), 4);
        List<String> sent = new ArrayList<>(CountOffRounds.childrenRound(dataSource, child, 8));
        CoopClient client = Coop.client(dataSource);
        for (MessageId id : parents.values()) {
            assertThat(client.statuses(id)).as("the parent committed by its last child").containsExactly(
                    RunStatus.COMMITTED);
        }
        List<String> advances = advances(sent);
        assertThat(advances).as("the round's advances sent").anyMatch(sql -> sql.contains("FROM input i"));
        assertThat(offending(advances)).as("updates of hot tables that call a function").isEmpty();
    }

    /** The round trips that write a run's events: the advances (their text up to a COMMIT). */
    static List<String> advances(List<String> sent) {
        List<String> advances = new ArrayList<>();
        for (String sql : sent) {
            String upToCommit = sql.split("(?m)^COMMIT\\b", 2)[0];
            if (upToCommit.contains("INSERT INTO coop.event") && HOT_UPDATE.matcher(upToCommit).find()) {
                advances.add(upToCommit);
            }
        }
        return advances;
    }

    /** Each statement of {@code sqls} that updates a hot table and calls one of {@link #CALLS}. */
    static Set<String> offending(List<String> sqls) {
        Set<String> offending = new LinkedHashSet<>();
        for (String sql : sqls) {
            for (String statement : STATEMENT_END.split(sql)) {
                if (HOT_UPDATE.matcher(statement).find() && CALLS.matcher(statement).find()) {
                    offending.add(statement.strip());
                }
            }
        }
        return offending;
    }
}
