package dev.coop.spring.docs;

import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.security.config.Customizer;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.web.SecurityFilterChain;

/** docs/dashboard.md: the dashboard's two roles in Spring Security, and its own CSRF protection (DashboardSecurityTest). */
@Configuration
public class DashboardSecuritySample {
    // tag::dashboard-spring-security[]
    @Bean
    SecurityFilterChain coopDashboard(HttpSecurity http) throws Exception {
        return http.securityMatcher("/coop/**") // coop.dashboard.path
                .authorizeHttpRequests(requests -> requests
                        .anyRequest().hasAnyRole("COOP_OPERATOR", "COOP_VIEWER")) // authorities ROLE_COOP_...
                .httpBasic(Customizer.withDefaults()) // or formLogin, oauth2Login: any way to a principal
                // the dashboard checks its own CSRF token (X-Coop-Csrf, kept in the HTTP session) on every action
                .csrf(csrf -> csrf.ignoringRequestMatchers("/coop/**"))
                .build();
    }
    // end::dashboard-spring-security[]
}
