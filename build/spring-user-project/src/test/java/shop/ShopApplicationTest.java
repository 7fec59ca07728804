package shop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.CoopClient;
import dev.coop.MessageId;
import dev.coop.inspect.Outcome;
import dev.coop.test.CoopPostgres;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

@SpringBootTest
class ShopApplicationTest {
    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        CoopPostgres server = CoopPostgres.shared();
        String database = server.createDatabase("shop");
        registry.add("spring.datasource.url", () -> server.jdbcUrl(database));
        registry.add("spring.datasource.username", server::user);
        registry.add("spring.datasource.password", server::password);
    }

    @Autowired
    CoopClient coop;
    @Autowired
    OrderService orders;
    @Autowired
    PurchaseOrderRepository repository;

    @Test
    void anOrderIsConfirmed() {
        MessageId message = orders.place("o-1", 2);
        assertThat(coop.awaitCompletion(message, Duration.ofSeconds(60))).isEqualTo(Outcome.COMMITTED);
        assertThat(repository.findById("o-1").orElseThrow().getStatus()).isEqualTo("CONFIRMED");
    }

    @Test
    void anOrderOutOfStockIsCompensated() {
        MessageId message = orders.place("o-2", 50);
        assertThat(coop.awaitCompletion(message, Duration.ofSeconds(60))).isEqualTo(Outcome.ROLLED_BACK);
        assertThat(repository.findById("o-2").orElseThrow().getStatus()).isEqualTo("CANCELLED");
    }
}
