package shop;

import dev.coop.Saga;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;

@Configuration
class ShopSagas {
    @Bean
    Saga<String> orderSaga(PurchaseOrderRepository orders, OrderService service, JdbcTemplate jdbc) {
        return Saga.on(ShopApplication.ORDER_PLACED, "order")
                .step("reserve", step -> service.mark(step.payload(), "RESERVED"))
                .compensateWith((step, cause) -> service.mark(step.payload(), "CANCELLED"))
                .step("confirm", step -> {
                    PurchaseOrder order = orders.findById(step.payload()).orElseThrow();
                    order.setStatus("CONFIRMED");
                    orders.flush();
                    // JDBC in the same step sees the JPA write
                    String seen = jdbc.queryForObject("SELECT status FROM purchase_order WHERE id = ?",
                            String.class, step.payload());
                    if (order.getQuantity() > 10) {
                        throw new IllegalStateException("Out of stock (saw " + seen + ")");
                    }
                })
                .build();
    }
}
