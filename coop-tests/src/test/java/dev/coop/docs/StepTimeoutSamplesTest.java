package dev.coop.docs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Coop;
import dev.coop.CoopEngine;
import dev.coop.MessageId;
import dev.coop.RetryPolicy;
import dev.coop.Saga;
import dev.coop.Topic;
import dev.coop.failure.StepTimedOutException;
import dev.coop.inspect.Outcome;
import dev.coop.test.CoopDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The samples of docs/guide/step-timeout.md, each run to completion. */
class StepTimeoutSamplesTest {
    @RegisterExtension
    final CoopDatabase db = new CoopDatabase();

    record Batch(int rows) {
    }

    static final Topic<Batch> BATCHES = Topic.of("timeout-batches", Batch.class);

    @Test
    void a_step_that_checks_for_its_end_stops_at_its_timeout_and_is_retried(DataSource dataSource)
            throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE imported (n int NOT NULL)");
        }
        // tag::step-timeout[]
        Saga<Batch> imports = Saga.on(BATCHES, "import")
                .stepTimeout(Duration.ofSeconds(30)) // every step of the saga, unless it sets its own
                .step("import rows", step -> {
                    Connection c = step.connection(); // refuses every use once the timeout passed
                    for (int i = 0; i < step.payload().rows(); i++) {
                        if (Thread.interrupted()) { // set when the timeout passed: stop here
                            throw new InterruptedException("import stopped at row " + i);
                        }
                        insert(c, i);
                    }
                })
                .timeout(Duration.ofSeconds(5)) // this step's own
                .retry(RetryPolicy.attempts(3).retryOn(StepTimedOutException.class))
                .build();
        // end::step-timeout[]
        try (CoopEngine engine = Coop.engine(dataSource).register(imports).start()) {
            MessageId id = engine.client().launch(BATCHES, new Batch(10));
            assertThat(engine.client().awaitCompletion(id, Duration.ofSeconds(30))).isEqualTo(Outcome.COMMITTED);
        }
    }

    static void insert(Connection c, int n) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO imported (n) VALUES (?)")) {
            ps.setInt(1, n);
            ps.executeUpdate();
        }
    }
}
