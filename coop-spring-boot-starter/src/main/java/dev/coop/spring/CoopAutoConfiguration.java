package dev.coop.spring;

import dev.coop.CoopClient;
import dev.coop.TimeSource;
import dev.coop.EngineListener;
import dev.coop.Saga;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.transaction.PlatformTransactionManager;

/**
 * Coop on the application's DataSource: a {@link CoopClient} that joins Spring-managed transactions, an engine running
 * every {@link Saga} bean ({@code coop.engine.enabled=false} for a client-only service) whose step code runs in a
 * Spring transaction on the step's connection (JdbcTemplate, JPA and {@code @Transactional} take part in the step's
 * transaction), and, when present, Micrometer metrics, OpenTelemetry traces, an Actuator health
 * indicator and endpoint. Every {@link EngineListener} bean is registered with the engine and the client.
 */
@AutoConfiguration(afterName = {"org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
        "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration"})
@ConditionalOnClass(CoopClient.class)
@ConditionalOnBean(DataSource.class)
@EnableConfigurationProperties(CoopProperties.class)
public class CoopAutoConfiguration {
    private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(CoopAutoConfiguration.class);

    @Bean
    @ConditionalOnMissingBean
    public CoopClient coopClient(DataSource dataSource, CoopProperties properties,
            ObjectProvider<EngineListener> listeners, ObjectProvider<TimeSource> clock) {
        CoopClient.Builder builder = CoopClient.builder(new SpringTransactionDataSource(dataSource))
                .schema(properties.getSchema()).migrate(properties.isMigrate())
                .maxPayloadBytes(properties.getMaxPayloadBytes()).requireHandlers(properties.isRequireHandlers())
                .databaseTimeout(properties.getEngine().getDatabaseTimeout());
        listeners.orderedStream().filter(l -> l != EngineListener.NONE).forEach(builder::listener);
        clock.ifUnique(builder::clock);
        return builder.build();
    }

    /**
     * The engine, started with the context. Its sagas, listeners and transaction manager are looked up when it starts,
     * so that neither the client nor a saga's dependencies wait for the engine bean.
     */
    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnProperty(prefix = "coop.engine", name = "enabled", havingValue = "true", matchIfMissing = true)
    public CoopEngineLifecycle coopEngine(DataSource dataSource, CoopProperties properties,
            ObjectProvider<Saga<?>> sagas, ObjectProvider<EngineListener> listeners,
            ObjectProvider<PlatformTransactionManager> transactionManagers, ObjectProvider<TimeSource> clock) {
        return new CoopEngineLifecycle(dataSource, properties, () -> sagas.orderedStream().toList(), () -> {
            List<EngineListener> all = new ArrayList<>();
            PlatformTransactionManager manager = transactionManagers.getIfUnique();
            if (manager == null && transactionManagers.stream().findAny().isPresent()) {
                log.info("Several PlatformTransactionManager beans and none primary: Coop's steps use a"
                        + " DataSourceTransactionManager of their own (mark the application's one @Primary)");
            }
            all.add(StepTransactions.of(dataSource, manager));
            listeners.orderedStream().filter(l -> l != EngineListener.NONE).forEach(all::add);
            return all;
        }).clock(clock::getIfUnique);
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = {"dev.coop.micrometer.CoopMetrics", "io.micrometer.core.instrument.MeterRegistry"})
    @ConditionalOnProperty(prefix = "coop.metrics", name = "enabled", havingValue = "true", matchIfMissing = true)
    static class Metrics {
        @Bean
        @ConditionalOnBean(type = "io.micrometer.core.instrument.MeterRegistry")
        @ConditionalOnMissingBean(dev.coop.micrometer.CoopMetrics.class)
        dev.coop.micrometer.CoopMetrics coopMetrics(io.micrometer.core.instrument.MeterRegistry registry,
                DataSource dataSource, CoopProperties properties) {
            // the gauges count with a client of their own: the CoopClient bean is built with the listeners
            CoopClient counter = CoopClient.builder(dataSource).schema(properties.getSchema()).migrate(false).build();
            // closed with the context (AutoCloseable): that stops the thread of the open-task gauges
            return new dev.coop.micrometer.CoopMetrics(registry)
                    .withRunGauges(counter, properties.getMetrics().getRunsRefresh())
                    .withTaskGauges(counter, properties.getMetrics().getTasksRefresh());
        }
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = {"dev.coop.opentelemetry.CoopTracing", "io.opentelemetry.api.OpenTelemetry"})
    @ConditionalOnProperty(prefix = "coop.tracing", name = "enabled", havingValue = "true", matchIfMissing = true)
    static class Tracing {
        /**
         * Traces with the application's OpenTelemetry bean, else with the global one when it is set (by the Java
         * agent, say); with neither, nothing (a listener that does nothing).
         */
        @Bean
        @ConditionalOnMissingBean(name = "coopTracing")
        EngineListener coopTracing(ObjectProvider<io.opentelemetry.api.OpenTelemetry> openTelemetry) {
            io.opentelemetry.api.OpenTelemetry otel = openTelemetry.getIfAvailable();
            if (otel == null && io.opentelemetry.api.GlobalOpenTelemetry.isSet()) {
                otel = io.opentelemetry.api.GlobalOpenTelemetry.get();
            }
            return otel == null ? EngineListener.NONE : new dev.coop.opentelemetry.CoopTracing(otel);
        }
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.boot.health.contributor.HealthIndicator")
    static class Health {
        @Bean
        @ConditionalOnMissingBean(name = "coopHealthIndicator")
        CoopHealthIndicator coopHealthIndicator(CoopClient client, ObjectProvider<CoopEngineLifecycle> engine,
                CoopProperties properties) {
            return new CoopHealthIndicator(client, engine.getIfAvailable(),
                    properties.getHealth().getParkedThreshold());
        }
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.boot.actuate.endpoint.annotation.Endpoint")
    static class Endpoint {
        @Bean
        @ConditionalOnMissingBean
        CoopEndpoint coopEndpoint(CoopClient client, ObjectProvider<CoopEngineLifecycle> engine) {
            return new CoopEndpoint(client, engine.getIfAvailable());
        }
    }

    /**
     * The web dashboard (module {@code coop-dashboard}) mounted at {@code coop.dashboard.path} when
     * {@code coop.dashboard.enabled=true} in a servlet web application. Authentication and roles come from the
     * container (Spring Security when present); the dashboard's own CSRF token protects its actions.
     *
     * <p>It backs off for the application's own {@code ServletRegistrationBean<DashboardServlet>} (or
     * {@code DashboardServlet} bean), by type: a condition on the bean name {@code coopDashboard} backed off, without
     * a word, for any bean of that name, such as a {@code SecurityFilterChain coopDashboard(...)} for the dashboard's
     * path. Its own bean name is one an application is unlikely to give a bean of another type.
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = {"dev.coop.dashboard.DashboardServlet", "jakarta.servlet.http.HttpServlet"})
    @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
    @ConditionalOnProperty(prefix = "coop.dashboard", name = "enabled", havingValue = "true")
    static class Dashboard {
        @Bean
        @ConditionalOnMissingBean(value = dev.coop.dashboard.DashboardServlet.class, parameterizedContainer = org.springframework.boot.web.servlet.ServletRegistrationBean.class)
        org.springframework.boot.web.servlet.ServletRegistrationBean<dev.coop.dashboard.DashboardServlet> coopDashboardServletRegistration(
                CoopClient client, CoopProperties properties) {
            CoopProperties.Dashboard d = properties.getDashboard();
            var bean = new org.springframework.boot.web.servlet.ServletRegistrationBean<>(
                    new dev.coop.dashboard.DashboardServlet(client, d.getOperatorRole(), d.getViewerRole(),
                            dev.coop.render.JsonMask.of(d.getMask())),
                    d.getPath() + "/*");
            bean.setName("coopDashboard");
            return bean;
        }
    }
}
