package dev.coop.spring.example;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * Orders and payments, two services' worth of beans in one application: {@link OrderService} places an order and
 * launches its saga inside a {@code @Transactional} method; the order saga ({@link OrderSagas}) reserves stock and
 * asks payments to charge ({@link PaymentSagas}), each step writing in the step's transaction: the orders with
 * Spring's JDBC support, the payments with a Spring Data JPA repository. Point {@code spring.datasource.*} at a PostgreSQL database and run it.
 */
@SpringBootApplication
public class ExampleApplication {
    public static void main(String[] args) {
        SpringApplication.run(ExampleApplication.class, args);
    }
}
