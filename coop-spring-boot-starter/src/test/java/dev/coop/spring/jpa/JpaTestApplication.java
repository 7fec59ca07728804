package dev.coop.spring.jpa;

import org.springframework.boot.autoconfigure.SpringBootApplication;

/** A Spring Boot application with JPA (Hibernate), JdbcTemplate and Coop's starter, as a service has them. */
@SpringBootApplication
public class JpaTestApplication {
}
