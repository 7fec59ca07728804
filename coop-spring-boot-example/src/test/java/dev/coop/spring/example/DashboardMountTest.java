package dev.coop.spring.example;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.dashboard.DashboardServlet;
import dev.coop.spring.CoopAutoConfiguration;
import dev.coop.test.CoopPostgres;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.boot.web.servlet.ServletRegistrationBean;

/**
 * {@code coop.dashboard.enabled=true} in a servlet web application mounts the dashboard's servlet at
 * {@code coop.dashboard.path} with the configured roles; it is off by default and never in a non-web application.
 */
class DashboardMountTest {
    private static final String DATABASE = CoopPostgres.shared().createDatabase("spring_dashboard_mount");

    /** A pool for one context (a context closes its DataSource bean). */
    private static DataSource dataSource() {
        return CoopPostgres.shared().dataSource(DATABASE, 4, "dashboard-mount");
    }

    @Test
    void a_servlet_application_mounts_the_dashboard_when_asked() {
        new WebApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(CoopAutoConfiguration.class))
                .withBean(DataSource.class, DashboardMountTest::dataSource)
                .withPropertyValues("coop.engine.enabled=false", "coop.dashboard.enabled=true",
                        "coop.dashboard.path=/ops/coop")
                .run(context -> {
                    assertThat(context).hasNotFailed().hasBean("coopDashboardServletRegistration");
                    ServletRegistrationBean<?> bean = context.getBean("coopDashboardServletRegistration",
                            ServletRegistrationBean.class);
                    assertThat(bean.getServlet()).isInstanceOf(DashboardServlet.class);
                    assertThat(bean.getUrlMappings()).containsExactly("/ops/coop/*");
                });
    }

    /**
     * The starter backs off by type, not by the name {@code coopDashboard}: the documented security chain for the
     * dashboard's path is a bean of that name (DashboardSecuritySample), and once silently unmounted the dashboard.
     */
    @Test
    void a_bean_named_coopDashboard_of_another_type_leaves_the_dashboard_mounted() {
        new WebApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(CoopAutoConfiguration.class))
                .withBean(DataSource.class, DashboardMountTest::dataSource)
                .withBean("coopDashboard", String.class, () -> "a security chain, say")
                .withPropertyValues("coop.engine.enabled=false", "coop.dashboard.enabled=true")
                .run(context -> assertThat(context).hasNotFailed().hasBean("coopDashboardServletRegistration"));
    }

    @Test
    void the_applications_own_registration_of_the_servlet_replaces_the_starters() {
        new WebApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(CoopAutoConfiguration.class))
                .withBean(DataSource.class, DashboardMountTest::dataSource)
                .withUserConfiguration(OwnRegistration.class)
                .withPropertyValues("coop.engine.enabled=false", "coop.dashboard.enabled=true")
                .run(context -> {
                    assertThat(context).hasNotFailed().doesNotHaveBean("coopDashboardServletRegistration");
                    assertThat(context.getBean("mine", ServletRegistrationBean.class).getUrlMappings())
                            .containsExactly("/mine/*");
                });
    }

    @org.springframework.context.annotation.Configuration(proxyBeanMethods = false)
    static class OwnRegistration {
        @org.springframework.context.annotation.Bean
        ServletRegistrationBean<DashboardServlet> mine(dev.coop.CoopClient client) {
            return new ServletRegistrationBean<>(new DashboardServlet(client), "/mine/*");
        }
    }

    @Test
    void the_dashboard_is_off_by_default_and_outside_web_applications() {
        new WebApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(CoopAutoConfiguration.class))
                .withBean(DataSource.class, DashboardMountTest::dataSource)
                .withPropertyValues("coop.engine.enabled=false")
                .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean("coopDashboardServletRegistration"));
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(CoopAutoConfiguration.class))
                .withBean(DataSource.class, DashboardMountTest::dataSource)
                .withPropertyValues("coop.engine.enabled=false", "coop.dashboard.enabled=true")
                .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean("coopDashboardServletRegistration"));
    }

    @Test
    void a_path_that_is_not_one_is_refused_with_its_value() {
        new WebApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(CoopAutoConfiguration.class))
                .withBean(DataSource.class, DashboardMountTest::dataSource)
                .withPropertyValues("coop.engine.enabled=false", "coop.dashboard.enabled=true",
                        "coop.dashboard.path=coop/*")
                .run(context -> assertThat(context).hasFailed().getFailure().rootCause()
                        .hasMessageContaining("coop.dashboard.path must look like /coop"));
    }
}
