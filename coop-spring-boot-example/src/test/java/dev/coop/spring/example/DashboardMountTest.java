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
                    assertThat(context).hasNotFailed().hasBean("coopDashboard");
                    ServletRegistrationBean<?> bean = context.getBean("coopDashboard", ServletRegistrationBean.class);
                    assertThat(bean.getServlet()).isInstanceOf(DashboardServlet.class);
                    assertThat(bean.getUrlMappings()).containsExactly("/ops/coop/*");
                });
    }

    @Test
    void the_dashboard_is_off_by_default_and_outside_web_applications() {
        new WebApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(CoopAutoConfiguration.class))
                .withBean(DataSource.class, DashboardMountTest::dataSource)
                .withPropertyValues("coop.engine.enabled=false")
                .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean("coopDashboard"));
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(CoopAutoConfiguration.class))
                .withBean(DataSource.class, DashboardMountTest::dataSource)
                .withPropertyValues("coop.engine.enabled=false", "coop.dashboard.enabled=true")
                .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean("coopDashboard"));
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
