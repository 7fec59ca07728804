package dev.coop.docs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.CoopEngine;
import dev.coop.MessageId;
import dev.coop.Saga;
import dev.coop.Topic;
import dev.coop.inspect.Outcome;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import dev.coop.test.CoopTables;
import dev.coop.test.TestClock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The guide's rolling deploy (docs/guide/versions-and-retention.md): a saga's new version beside the old one, which drains and is retired. */
class RollingDeploysTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(20);

    record Invoice(String id) {
    }

    static final Topic<Invoice> INVOICES = Topic.of("invoices", Invoice.class);

    final List<String> sent = new CopyOnWriteArrayList<>();
    final List<String> approved = new CopyOnWriteArrayList<>();

    @Test
    void a_new_version_beside_the_old_one_drains_it(DataSource dataSource) {
        TestClock clock = new TestClock();
        // tag::saga-versions[]
        Saga<Invoice> v1 = Saga.on(INVOICES, "invoicing") // version 1: the default
                .step("draft", step -> {
                })
                .sleep("grace", Duration.ofDays(1))
                .step("send", step -> sent.add("v1 " + step.payload().id()))
                .build();
        Saga<Invoice> v2 = Saga.on(INVOICES, "invoicing").version(2) // the steps changed: a new version
                .step("draft", step -> {
                })
                .step("approve", step -> approved.add(step.payload().id()))
                .step("send", step -> sent.add("v2 " + step.payload().id()))
                .build();
        // end::saga-versions[]
        MessageId old;
        try (CoopEngine before = Coop.engine(dataSource).clock(clock).register(v1).start()) { // the old deploy
            old = before.client().launch(INVOICES, new Invoice("inv-1"));
            Await.until("inv-1 sleeps", WAIT, () -> CoopTables.of(dataSource).idleAt(clock.now())
                    && before.client().events(old).size() > 3);
        }
        // tag::rolling-deploy[]
        // the new deploy: v2 for new runs, and v1 beside it to finish the runs that started as v1, with v1's steps
        try (CoopEngine engine = Coop.engine(dataSource).clock(clock).register(v2, v1).start()) {
            CoopClient client = engine.client();
            MessageId fresh = client.launch(INVOICES, new Invoice("inv-2")); // a new run: version 2
            clock.advance(Duration.ofDays(1)); // inv-1's grace period ends: its v1 run goes on with v1's "send"
            assertThat(client.awaitCompletion(fresh, WAIT)).isEqualTo(Outcome.COMMITTED);
            assertThat(client.awaitCompletion(old, WAIT)).isEqualTo(Outcome.COMMITTED);
            // no v1 run is unfinished any more (coop saga list): retire v1, and the next deploy drops it
            assertThat(client.retireSagaVersion("invoicing", 1)).isTrue();
        }
        // end::rolling-deploy[]
        assertThat(sent).containsExactlyInAnyOrder("v1 inv-1", "v2 inv-2");
        assertThat(approved).containsExactly("inv-2");
    }
}
