package dev.coop.spring.example;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.CoopClient;
import dev.coop.MessageId;
import dev.coop.spring.CoopEngineLifecycle;
import dev.coop.test.CoopPostgres;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** {@code coop.engine.enabled=false}: a client-only service launches, and leaves the running to others. */
@SpringBootTest(properties = "coop.engine.enabled=false")
class ClientOnlyTest {
    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        CoopPostgres server = CoopPostgres.shared();
        String database = server.createDatabase("spring_client_only");
        registry.add("spring.datasource.url", () -> server.jdbcUrl(database));
        registry.add("spring.datasource.username", server::user);
        registry.add("spring.datasource.password", server::password);
    }

    @Autowired
    OrderService orders;
    @Autowired
    CoopClient coop;
    @Autowired
    org.springframework.jdbc.core.JdbcTemplate jdbc;
    @Autowired
    ObjectProvider<CoopEngineLifecycle> engine;

    @Test
    void launchesWithoutAnEngine() {
        assertThat(engine.getIfAvailable()).isNull();
        MessageId message = orders.place(new Topics.Order("o-" + UUID.randomUUID(), "chair", 700));
        // stored for the engines of other services (none registered the topic in this database: no run yet)
        assertThat(jdbc.queryForObject("SELECT count(*) FROM coop.message WHERE id = ?", Long.class,
                message.value())).isEqualTo(1L);
        assertThat(coop.statuses(message)).isEmpty();
    }
}
