package dev.coop.spring.example;

import dev.coop.Topic;

/** The messages the two services exchange. */
public final class Topics {
    /** An order was placed: the order saga runs it. */
    public static final Topic<Order> ORDER_PLACED = Topic.of("orders.placed", Order.class);
    /** Payments, charge this: the payment saga runs it. */
    public static final Topic<Charge> CHARGE = Topic.of("payments.charge", Charge.class);

    public record Order(String orderId, String item, long amountCents) {
    }

    public record Charge(String orderId, long amountCents) {
    }

    private Topics() {
    }
}
