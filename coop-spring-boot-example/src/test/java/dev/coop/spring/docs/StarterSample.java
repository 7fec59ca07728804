package dev.coop.spring.docs;

import static dev.coop.spring.docs.StarterSample.CHARGE;
import static dev.coop.spring.docs.StarterSample.ORDER_PLACED;

import dev.coop.CoopClient;
import dev.coop.MessageId;
import dev.coop.Saga;
import dev.coop.Topic;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;
import dev.coop.spring.docs.StarterSample.Charge;
import dev.coop.spring.docs.StarterSample.Order;

/** The README's Spring Boot sample (outside the example application's package: not scanned by its tests). */
final class StarterSample {
    record Order(String id, long cents) {
    }

    record Charge(String orderId, long cents) {
    }

    static final Topic<Order> ORDER_PLACED = Topic.of("orders.placed", Order.class);
    static final Topic<Charge> CHARGE = Topic.of("payments.charge", Charge.class);

    private StarterSample() {
    }

}

// tag::spring-boot-starter[]
@Configuration
class OrderSagas {
    @Bean
    Saga<Order> orderSaga(JdbcTemplate jdbc) {
        return Saga.on(ORDER_PLACED, "order")
                .step("reserve", step -> {
                    jdbc.update("UPDATE orders SET status = 'RESERVED' WHERE id = ?", step.payload().id());
                    step.launch(CHARGE, new Charge(step.payload().id(), step.payload().cents()));
                })
                .step("confirm", step -> jdbc.update("UPDATE orders SET status = 'CONFIRMED' WHERE id = ?",
                        step.payload().id()))
                .build();
    }
}

@Service
class OrderService {
    private final JdbcTemplate jdbc;
    private final CoopClient coop;

    OrderService(JdbcTemplate jdbc, CoopClient coop) {
        this.jdbc = jdbc;
        this.coop = coop;
    }

    @Transactional
    MessageId place(Order order) {
        jdbc.update("INSERT INTO orders (id, status) VALUES (?, 'PLACED')", order.id());
        return coop.launch(ORDER_PLACED, order); // commits with the INSERT, or not at all
    }
}
// end::spring-boot-starter[]
