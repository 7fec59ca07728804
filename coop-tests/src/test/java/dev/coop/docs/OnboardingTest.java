package dev.coop.docs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Coop;
import dev.coop.CoopEngine;
import dev.coop.MessageId;
import dev.coop.Saga;
import dev.coop.Topic;
import dev.coop.inspect.Outcome;
import dev.coop.test.CoopDatabase;
import dev.coop.test.EventLog;
import dev.coop.test.Invariants;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The testing sample of README.md and docs/guide/testing.md. */
// tag::testing[]
class OnboardingTest {
    record Onboarding(String email) {
    }

    static final Topic<Onboarding> ONBOARDING = Topic.of("onboarding-requested", Onboarding.class);
    static final Saga<Onboarding> onboarding = Saga.on(ONBOARDING, "onboarding")
            .step("create-account", step -> {
            })
            .step("send-welcome", step -> {
            })
            .build();

    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase(); // a fresh database for this class

    @Test
    void onboarding_commits(DataSource dataSource) {
        try (CoopEngine engine = Coop.engine(dataSource).register(onboarding).start()) {
            MessageId id = engine.client().launch(ONBOARDING, new Onboarding("ada@example.com"));
            assertThat(engine.client().awaitCompletion(id, Duration.ofSeconds(10))).isEqualTo(Outcome.COMMITTED);
            assertThat(EventLog.rows(engine.client().events(id))).contains("COMMITTED onboarding send-welcome");
            Invariants.assertStepBarrier(engine.client().events(id)); // no step started before its children finished
        }
    }
}
// end::testing[]
