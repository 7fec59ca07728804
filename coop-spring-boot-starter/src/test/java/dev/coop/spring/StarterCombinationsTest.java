package dev.coop.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.CoopClient;
import dev.coop.EngineListener;
import dev.coop.MessageId;
import dev.coop.Saga;
import dev.coop.Topic;
import dev.coop.inspect.Outcome;
import dev.coop.micrometer.CoopMetrics;
import dev.coop.opentelemetry.CoopTracing;
import dev.coop.test.CoopPostgres;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.opentelemetry.api.OpenTelemetry;
import java.time.Duration;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.hibernate.autoconfigure.HibernateJpaAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.JdbcTemplateAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.boot.web.servlet.ServletRegistrationBean;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.orm.jpa.JpaTransactionManager;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The starter in each combination of optional modules: it boots with only a DataSource (the README's three
 * dependencies), with Micrometer, OpenTelemetry, Actuator, a web application, JPA, all of them, and client only; in each
 * an engine runs a saga whose step writes with JdbcTemplate in the step's transaction.
 */
class StarterCombinationsTest {
    static final Topic<String> WRITE = Topic.of("starter-write", String.class);
    static final Topic<String> MARK = Topic.of("starter-mark", String.class);
    private static String url;

    @BeforeAll
    static void database() {
        CoopPostgres server = CoopPostgres.shared();
        String database = server.createDatabase("starter_combinations");
        url = server.jdbcUrl(database);
        try (var pool = server.dataSource(database, 2, "setup")) {
            new JdbcTemplate(pool).execute("CREATE TABLE starter_rows (id text PRIMARY KEY, via text NOT NULL)");
        }
    }

    private static ApplicationContextRunner runner() {
        CoopPostgres server = CoopPostgres.shared();
        return new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
                        DataSourceTransactionManagerAutoConfiguration.class, TransactionAutoConfiguration.class,
                        JdbcTemplateAutoConfiguration.class, CoopAutoConfiguration.class))
                .withPropertyValues("spring.datasource.url=" + url, "spring.datasource.username=" + server.user(),
                        "spring.datasource.password=" + server.password(), "coop.engine.poll-interval=200ms")
                .withUserConfiguration(Sagas.class);
    }

    /** Only what the README lists: no Micrometer, OpenTelemetry, Actuator, JPA or web classes at all. */
    private static ApplicationContextRunner bare() {
        return runner().withClassLoader(new FilteredClassLoader("io.micrometer", "io.opentelemetry",
                "dev.coop.micrometer", "dev.coop.opentelemetry", "org.springframework.boot.actuate",
                "org.springframework.boot.health", "org.hibernate", "jakarta.persistence", "dev.coop.dashboard"));
    }

    @Test
    void bootsWithOnlyADataSourceAndRunsASagaWithJdbcInItsStep() {
        bare().run(context -> {
            assertThat(context).hasNotFailed().hasSingleBean(CoopClient.class)
                    .hasSingleBean(CoopEngineLifecycle.class).doesNotHaveBean(CoopMetrics.class)
                    .doesNotHaveBean("coopHealthIndicator");
            assertThat(context.getBean(CoopEngineLifecycle.class).engine()).isPresent();
            assertWrites(context, DataSourceTransactionManager.class);
        });
    }

    @Test
    void bootsWhenASagaUsesAServiceThatInjectsTheClient() {
        bare().withUserConfiguration(ServiceWithClient.class).run(context -> {
            assertThat(context).hasNotFailed();
            assertWrites(context, DataSourceTransactionManager.class);
        });
    }

    @Test
    void aRollbackOnlyMarkFromATransactionTemplateRollsTheStepBack() {
        bare().run(context -> {
            CoopClient coop = context.getBean(CoopClient.class);
            String id = "mark-" + UUID.randomUUID();
            MessageId message = coop.launch(MARK, id);
            assertThat(coop.awaitCompletion(message, Duration.ofSeconds(30))).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(rows(context, id)).isZero();
        });
    }

    @Test
    void withMicrometer() {
        runner().withBean(MeterRegistry.class, SimpleMeterRegistry::new).run(context -> {
            assertThat(context).hasNotFailed().hasSingleBean(CoopMetrics.class);
            assertWrites(context, DataSourceTransactionManager.class);
            assertThat(context.getBean(MeterRegistry.class).find("coop.step").timers()).isNotEmpty();
        });
    }

    @Test
    void withOpenTelemetry() {
        runner().withBean(OpenTelemetry.class, OpenTelemetry::noop).run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context.getBean("coopTracing", EngineListener.class)).isInstanceOf(CoopTracing.class);
            assertWrites(context, DataSourceTransactionManager.class);
        });
    }

    @Test
    void withActuator() {
        runner().run(context -> {
            assertThat(context).hasNotFailed().hasSingleBean(CoopHealthIndicator.class)
                    .hasSingleBean(CoopEndpoint.class);
            assertWrites(context, DataSourceTransactionManager.class);
            assertThat(context.getBean(CoopHealthIndicator.class).health(true).getStatus()).isEqualTo(Status.UP);
        });
    }

    @Test
    void inAWebApplicationWithTheDashboard() {
        new WebApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
                        DataSourceTransactionManagerAutoConfiguration.class, TransactionAutoConfiguration.class,
                        JdbcTemplateAutoConfiguration.class, CoopAutoConfiguration.class))
                .withPropertyValues("spring.datasource.url=" + url,
                        "spring.datasource.username=" + CoopPostgres.shared().user(),
                        "spring.datasource.password=" + CoopPostgres.shared().password(),
                        "coop.engine.poll-interval=200ms", "coop.dashboard.enabled=true")
                .withUserConfiguration(Sagas.class).run(context -> {
                    assertThat(context).hasNotFailed().hasBean("coopDashboardServletRegistration");
                    assertThat(context.getBean("coopDashboardServletRegistration"))
                            .isInstanceOf(ServletRegistrationBean.class);
                    assertWrites(context, DataSourceTransactionManager.class);
                });
    }

    @Test
    void theDashboardsMaskComesFromCoopDashboardMask() {
        WebApplicationContextRunner web = new WebApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
                        DataSourceTransactionManagerAutoConfiguration.class, TransactionAutoConfiguration.class,
                        JdbcTemplateAutoConfiguration.class, CoopAutoConfiguration.class))
                .withPropertyValues("spring.datasource.url=" + url,
                        "spring.datasource.username=" + CoopPostgres.shared().user(),
                        "spring.datasource.password=" + CoopPostgres.shared().password(),
                        "coop.engine.poll-interval=200ms", "coop.dashboard.enabled=true")
                .withUserConfiguration(Sagas.class);
        web.withPropertyValues("coop.dashboard.mask=password,*token*").run(context -> {
            assertThat(context).hasNotFailed().hasBean("coopDashboardServletRegistration");
            assertThat(context.getBean(CoopProperties.class).getDashboard().getMask())
                    .containsExactly("password", "*token*");
        });
        web.withPropertyValues("coop.dashboard.mask=pass word").run(context -> assertThat(context).hasFailed()
                .getFailure().rootCause().hasMessageContaining("was 'pass word'"));
    }

    @Test
    void withJpaStepsRunInTheJpaTransactionManagersTransactions() {
        runner().withConfiguration(AutoConfigurations.of(HibernateJpaAutoConfiguration.class)).run(context -> {
            assertThat(context).hasNotFailed();
            assertWrites(context, JpaTransactionManager.class);
        });
    }

    @Test
    void withEverything() {
        runner().withConfiguration(AutoConfigurations.of(HibernateJpaAutoConfiguration.class))
                .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
                .withBean(OpenTelemetry.class, OpenTelemetry::noop).withUserConfiguration(ServiceWithClient.class)
                .run(context -> {
                    assertThat(context).hasNotFailed().hasSingleBean(CoopMetrics.class)
                            .hasSingleBean(CoopHealthIndicator.class);
                    assertWrites(context, JpaTransactionManager.class);
                });
    }

    @Test
    void clientOnlyWhenTheEngineIsDisabled() {
        bare().withPropertyValues("coop.engine.enabled=false").run(context -> {
            assertThat(context).hasNotFailed().hasSingleBean(CoopClient.class)
                    .doesNotHaveBean(CoopEngineLifecycle.class);
            assertThat(context.getBean(CoopClient.class).launch(WRITE, "client-only-" + UUID.randomUUID()))
                    .isNotNull();
        });
    }

    /** A step writes through JdbcTemplate and through a MANDATORY TransactionTemplate: both commit with it. */
    private static void assertWrites(ApplicationContext context,
            Class<? extends PlatformTransactionManager> manager) {
        assertThat(context.getBean(PlatformTransactionManager.class)).isInstanceOf(manager);
        CoopClient coop = context.getBean(CoopClient.class);
        String id = "w-" + UUID.randomUUID();
        MessageId message = coop.launch(WRITE, id);
        assertThat(coop.awaitCompletion(message, Duration.ofSeconds(30))).isEqualTo(Outcome.COMMITTED);
        assertThat(rows(context, id)).isEqualTo(2);
    }

    private static long rows(ApplicationContext context, String id) {
        return context.getBean(JdbcTemplate.class).queryForObject("SELECT count(*) FROM starter_rows WHERE id LIKE ?",
                Long.class, id + "%");
    }

    @Configuration(proxyBeanMethods = false)
    static class Sagas {
        @Bean
        Saga<String> writeSaga(JdbcTemplate jdbc, PlatformTransactionManager manager) {
            TransactionTemplate mandatory = new TransactionTemplate(manager);
            mandatory.setPropagationBehavior(TransactionDefinition.PROPAGATION_MANDATORY);
            return Saga.on(WRITE, "starter-write").step("write", step -> {
                jdbc.update("INSERT INTO starter_rows (id, via) VALUES (?, 'jdbc')", step.payload());
                mandatory.executeWithoutResult(status -> jdbc.update(
                        "INSERT INTO starter_rows (id, via) VALUES (?, 'template')", step.payload() + "-template"));
            }).build();
        }

        @Bean
        Saga<String> markSaga(JdbcTemplate jdbc, PlatformTransactionManager manager) {
            TransactionTemplate required = new TransactionTemplate(manager);
            return Saga.on(MARK, "starter-mark").step("mark", step -> required.executeWithoutResult(status -> {
                jdbc.update("INSERT INTO starter_rows (id, via) VALUES (?, 'marked')", step.payload());
                status.setRollbackOnly();
            })).build();
        }
    }

    /** A service that injects the client, used by a saga's step: a cycle the engine bean must not close. */
    static class Greeter {
        final CoopClient coop;

        Greeter(CoopClient coop) {
            this.coop = coop;
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class ServiceWithClient {
        @Bean
        Greeter greeter(CoopClient coop) {
            return new Greeter(coop);
        }

        @Bean
        Saga<String> greetSaga(Greeter greeter) {
            return Saga.on(Topic.of("starter-greet", String.class), "starter-greet")
                    .step("greet", step -> greeter.coop.launch(Topic.of("starter-greeted", String.class), "hi"))
                    .build();
        }
    }
}
