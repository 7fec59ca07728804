package dev.coop.spring.example;

import dev.coop.CoopClient;
import dev.coop.MessageId;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/** The orders service's front door: the order row and the saga's message commit together, or neither does. */
@Service
public class OrderService {
    private final JdbcTemplate jdbc;
    private final CoopClient coop;

    public OrderService(JdbcTemplate jdbc, CoopClient coop) {
        this.jdbc = jdbc;
        this.coop = coop;
    }

    @Transactional
    public MessageId place(Topics.Order order) {
        jdbc.update("INSERT INTO orders (id, item, amount_cents, status) VALUES (?, ?, ?, 'PLACED')", order.orderId(),
                order.item(), order.amountCents());
        return coop.launch(Topics.ORDER_PLACED, order);
    }

    /** Places the order, then fails: the transaction rolls back, and with it the launch. */
    @Transactional
    public MessageId placeThenFail(Topics.Order order) {
        place(order);
        throw new IllegalStateException("the caller changed its mind");
    }
}
