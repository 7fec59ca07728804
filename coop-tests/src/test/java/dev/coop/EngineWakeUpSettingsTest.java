package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Payloads.Empty;
import dev.coop.test.CoopDatabase;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** An engine's wake-up settings on plain PostgreSQL, as it settled them ({@code CitusEngineDefaultsTest}: on Citus). */
class EngineWakeUpSettingsTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Saga<Empty> SAGA = Saga.on(Topic.of("wake-settings", Empty.class), "wake-settings").step("s", step -> {
    }).build();

    @Test
    void an_engine_listens_and_polls_every_second_by_default(DataSource dataSource) {
        try (CoopEngine engine = Coop.engine(dataSource).register(SAGA).start()) {
            assertThat(engine.listens()).isTrue();
            assertThat(engine.pollInterval()).isEqualTo(Coop.DEFAULT_POLL_INTERVAL);
        }
    }

    @Test
    void an_engine_keeps_what_it_was_told(DataSource dataSource) {
        try (CoopEngine engine = Coop.engine(dataSource).notifications(false).pollInterval(Duration.ofMillis(30))
                .register(SAGA).start()) {
            assertThat(engine.listens()).isFalse();
            assertThat(engine.pollInterval()).isEqualTo(Duration.ofMillis(30));
        }
    }
}
