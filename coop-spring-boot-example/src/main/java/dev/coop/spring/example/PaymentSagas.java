package dev.coop.spring.example;

import dev.coop.Saga;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The payments service's saga: record the payment (a Spring Data JPA repository, in the step's transaction); amounts
 * above the limit are declined after the write, which then rolls back with the step.
 */
@Configuration(proxyBeanMethods = false)
public class PaymentSagas {
    @Bean
    Saga<Topics.Charge> paymentSaga(PaymentRepository payments,
            @Value("${payments.limit-cents:100000}") long limitCents) {
        return Saga.on(Topics.CHARGE, "payment")
                .step("charge", step -> {
                    payments.save(new Payment(step.payload().orderId(), step.payload().amountCents()));
                    if (step.payload().amountCents() > limitCents) {
                        throw new IllegalArgumentException("Declined: " + step.payload().amountCents()
                                + " cents is above the limit of " + limitCents);
                    }
                })
                .build();
    }
}
