package dev.coop.spring.example;

import dev.coop.Saga;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;

/** The orders service's saga: reserve the item, have payments charge, confirm; undone by releasing the item. */
@Configuration(proxyBeanMethods = false)
public class OrderSagas {
    private static final Logger log = LoggerFactory.getLogger(OrderSagas.class);

    @Bean
    Saga<Topics.Order> orderSaga(JdbcTemplate jdbc) {
        return Saga.on(Topics.ORDER_PLACED, "order")
                .step("reserve", step -> {
                    log.info("Reserving {} for order {}", step.payload().item(), step.payload().orderId());
                    jdbc.update("UPDATE orders SET status = 'RESERVED' WHERE id = ?", step.payload().orderId());
                    step.launch(Topics.CHARGE,
                            new Topics.Charge(step.payload().orderId(), step.payload().amountCents()));
                })
                .compensateWith((step, cause) -> jdbc.update("UPDATE orders SET status = 'CANCELLED' WHERE id = ?",
                        step.payload().orderId()))
                .step("confirm", step -> jdbc.update("UPDATE orders SET status = 'CONFIRMED' WHERE id = ?",
                        step.payload().orderId()))
                .build();
    }
}
