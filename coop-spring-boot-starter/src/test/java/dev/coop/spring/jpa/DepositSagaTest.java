package dev.coop.spring.jpa;

import static dev.coop.spring.jpa.JpaSagas.DEPOSIT;
import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.CoopClient;
import dev.coop.MessageId;
import dev.coop.inspect.Outcome;
import dev.coop.test.CoopPostgres;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

// closed after the class, while the embedded PostgreSQL still runs (not at JVM exit, racing its shutdown)
@DirtiesContext
// tag::spring-boot-test[]
@SpringBootTest(properties = "spring.jpa.hibernate.ddl-auto=create")
class DepositSagaTest {
    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) { // the embedded PostgreSQL of coop-test
        CoopPostgres server = CoopPostgres.shared();
        String database = server.createDatabase("deposits");
        registry.add("spring.datasource.url", () -> server.jdbcUrl(database));
        registry.add("spring.datasource.username", server::user);
        registry.add("spring.datasource.password", server::password);
    }

    @Autowired
    CoopClient coop;
    @Autowired
    EntryRepository entries;

    @Test
    void aDepositIsRecordedAndAudited() {
        MessageId message = coop.launch(DEPOSIT, "d-1");

        assertThat(coop.awaitCompletion(message, Duration.ofSeconds(30))).isEqualTo(Outcome.COMMITTED);
        assertThat(entries.findById("d-1")).hasValueSatisfying(e -> assertThat(e.getAmount()).isEqualTo(100));
        assertThat(entries.existsById("d-1-audit")).isTrue();
    }
}
// end::spring-boot-test[]
