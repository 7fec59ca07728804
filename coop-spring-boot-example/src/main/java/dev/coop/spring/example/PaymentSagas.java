package dev.coop.spring.example;

import dev.coop.Saga;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.simple.JdbcClient;

/** The payments service's saga: record the payment; amounts above the limit are declined after the write. */
@Configuration(proxyBeanMethods = false)
public class PaymentSagas {
    @Bean
    Saga<Topics.Charge> paymentSaga(JdbcClient jdbc, @Value("${payments.limit-cents:100000}") long limitCents) {
        return Saga.on(Topics.CHARGE, "payment")
                .step("charge", step -> {
                    jdbc.sql("INSERT INTO payments (order_id, amount_cents) VALUES (?, ?)")
                            .params(step.payload().orderId(), step.payload().amountCents()).update();
                    if (step.payload().amountCents() > limitCents) {
                        throw new IllegalArgumentException("Declined: " + step.payload().amountCents()
                                + " cents is above the limit of " + limitCents);
                    }
                })
                .build();
    }
}
