package dev.coop.render;

import dev.coop.failure.Failure;
import dev.coop.inspect.Hierarchy;
import dev.coop.Lineage;
import dev.coop.MessageId;
import dev.coop.RunStatus;
import dev.coop.inspect.RunView;
import dev.coop.inspect.StepView;
import dev.coop.inspect.StepView.Kind;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * Fixed hierarchies, as the engine would record them for: an order whose payment commits; whose payment fails (the
 * order rolls back); whose refund fails during that rollback; and one an operator cancels while payment runs.
 */
final class Fixtures {
    static final OffsetDateTime T0 = OffsetDateTime.parse("2026-03-01T09:30:00.000Z");
    static final MessageId ORDER = new MessageId(UUID.fromString("01900000-0000-7000-8000-000000000001"));
    static final MessageId PAYMENT = new MessageId(UUID.fromString("01900000-0000-7000-8000-000000000002"));
    static final UUID ORDER_RUN = UUID.fromString("01900000-0000-7000-8000-0000000000a1");
    static final UUID PAYMENT_RUN = UUID.fromString("01900000-0000-7000-8000-0000000000b1");
    static final String SHOP = "shop-1a2b3c4d";
    static final String BANK = "bank-9f8e7d6c";

    private Fixtures() {
    }

    static OffsetDateTime at(int ms) {
        return T0.plusNanos(ms * 1_000_000L);
    }

    static StepView step(String name, Kind kind, String engine, int from, int to, List<MessageId> launched,
            Failure failure) {
        return new StepView(name, kind, engine, at(from), at(to), launched, failure);
    }

    static Failure failure(String message, String type, String source, Failure... causes) {
        return new Failure(message, type, source,
                List.of(new Failure.Frame("Bank.java", 42, "com.example.Bank", "charge"),
                        new Failure.Frame("Payment.java", 17, "com.example.Payment", "lambda$saga$0")),
                List.of(causes));
    }

    static Failure coop(String message, String type, String source, Failure... causes) {
        return new Failure(message, "dev.coop.failure." + type, source, List.of(), List.of(causes));
    }

    static Lineage orderLineage() {
        return new Lineage(List.of(ORDER.value(), ORDER_RUN));
    }

    static Lineage paymentLineage() {
        return new Lineage(List.of(ORDER.value(), ORDER_RUN, PAYMENT_RUN));
    }

    static RunView payment(RunStatus status, boolean rollingBack, int finished, Failure failure,
            List<StepView> steps) {
        return new RunView(PAYMENT_RUN, PAYMENT, "payment-requested", "payment", paymentLineage(), status,
                rollingBack, at(12), at(20), finished < 0 ? null : at(finished), failure, steps, List.of());
    }

    static Hierarchy order(RunStatus status, boolean rollingBack, int finished, Failure failure,
            List<StepView> steps, RunView payment) {
        RunView order = new RunView(ORDER_RUN, ORDER, "order-placed", "order", orderLineage(), status, rollingBack,
                at(1), at(9), finished < 0 ? null : at(finished), failure, steps, List.of(payment));
        return new Hierarchy(ORDER, "order-placed", T0, List.of(order));
    }

    /** A runnable payment run that its saga's concurrency limit holds back. */
    static RunView waitingForSlot() {
        return new RunView(PAYMENT_RUN, PAYMENT, "payment-requested", "payment", paymentLineage(), RunStatus.RUNNABLE,
                false, at(12), null, null, null, List.of(), List.of(), List.of(), 1,
                "waiting for a slot (3 of 3 busy)");
    }

    /** The order reserves stock and asks for payment; payment charges the card; the order confirms. */
    static Hierarchy success() {
        RunView payment = payment(RunStatus.COMMITTED, false, 31, null,
                List.of(step("charge", Kind.STEP, BANK, 14, 31, List.of(), null)));
        return order(RunStatus.COMMITTED, false, 45, null, List.of(
                step("reserve-stock", Kind.STEP, SHOP, 2, 11, List.of(PAYMENT), null),
                step("confirm", Kind.STEP, SHOP, 38, 45, List.of(), null)), payment);
    }

    /** The card is declined: payment rolls back, so the order does, compensating its reservation. */
    static Hierarchy rollback() {
        Failure declined = failure("Card declined", "java.lang.IllegalStateException", "payment[" + BANK + "]");
        Failure childFailed = coop("1 run caused by step 'reserve-stock' rolled back", "ChildRolledBackException",
                "order[" + SHOP + "]", declined);
        RunView payment = payment(RunStatus.ROLLED_BACK, true, 33, declined,
                List.of(step("charge", Kind.STEP, BANK, 14, 31, List.of(), declined)));
        return order(RunStatus.ROLLED_BACK, true, 60, childFailed, List.of(
                step("reserve-stock", Kind.STEP, SHOP, 2, 11, List.of(PAYMENT), null),
                step("reserve-stock", Kind.STEP, SHOP, 38, 41, List.of(), childFailed),
                step("Rollback of reserve-stock (rolling back child scopes)", Kind.ROLLBACK_CHILDREN, SHOP, 44, 47,
                        List.of(PAYMENT), null),
                step("Rollback of reserve-stock", Kind.COMPENSATION, SHOP, 50, 60, List.of(), null)), payment);
    }

    /** Confirming fails; rolling back, the payment's refund fails too: both end ROLLBACK_FAILED. */
    static Hierarchy failedRollback() {
        Failure boom = failure("Warehouse closed", "java.lang.IllegalStateException", "order[" + SHOP + "]");
        Failure parent = coop("order is rolling back", "ParentSaidSoException", "order[" + SHOP + "]", boom);
        Failure refund = failure("Refund refused: account frozen", "com.example.RefundException",
                "payment[" + BANK + "]", parent);
        Failure childRollback = coop("1 run caused by step 'reserve-stock' failed to roll back",
                "ChildRollbackFailedException", "order[" + SHOP + "]", refund, boom);
        RunView payment = payment(RunStatus.ROLLBACK_FAILED, true, 70, refund, List.of(
                step("charge", Kind.STEP, BANK, 14, 31, List.of(), null),
                step("Rollback of charge (rolling back child scopes)", Kind.ROLLBACK_CHILDREN, BANK, 55, 57,
                        List.of(), null),
                step("Rollback of charge", Kind.COMPENSATION, BANK, 60, 70, List.of(), refund)));
        return order(RunStatus.ROLLBACK_FAILED, true, 80, childRollback, List.of(
                step("reserve-stock", Kind.STEP, SHOP, 2, 11, List.of(PAYMENT), null),
                step("confirm", Kind.STEP, SHOP, 38, 41, List.of(), boom),
                step("Rollback of reserve-stock (rolling back child scopes)", Kind.ROLLBACK_CHILDREN, SHOP, 44, 80,
                        List.of(PAYMENT), childRollback)),
                payment);
    }

    /** An operator cancels while the payment charges: payment gives up, and so does the order. */
    static Hierarchy cancellation() {
        Failure requested = new Failure("Customer called to cancel", "dev.coop.failure.CancellationRequestedException",
                "coop-client", List.of(), List.of());
        Failure paymentGaveUp = coop("Gave up: Customer called to cancel", "GaveUpException",
                "payment[" + BANK + "]", requested);
        Failure orderGaveUp = coop("Gave up: Customer called to cancel", "GaveUpException", "order[" + SHOP + "]",
                requested);
        RunView payment = payment(RunStatus.ROLLED_BACK, true, 33, paymentGaveUp,
                List.of(step("charge", Kind.STEP, BANK, 14, 31, List.of(), paymentGaveUp)));
        return order(RunStatus.ROLLED_BACK, true, 62, orderGaveUp, List.of(
                step("reserve-stock", Kind.STEP, SHOP, 2, 11, List.of(PAYMENT), null),
                step("confirm", Kind.STEP, SHOP, 40, 41, List.of(), orderGaveUp),
                step("Rollback of reserve-stock (rolling back child scopes)", Kind.ROLLBACK_CHILDREN, SHOP, 44, 47,
                        List.of(PAYMENT), null),
                step("Rollback of reserve-stock", Kind.COMPENSATION, SHOP, 50, 62, List.of(), null)), payment);
    }

    /** A hierarchy still running: the order waits for its payment. */
    static Hierarchy running() {
        RunView payment = new RunView(PAYMENT_RUN, PAYMENT, "payment-requested", "payment", paymentLineage(),
                RunStatus.RUNNABLE, false, at(12), null, null, null, List.of(), List.of());
        RunView order = new RunView(ORDER_RUN, ORDER, "order-placed", "order", orderLineage(), RunStatus.WAITING,
                false, at(1), at(9), null, null,
                new ArrayList<>(List.of(step("reserve-stock", Kind.STEP, SHOP, 2, 11, List.of(PAYMENT), null))),
                List.of(payment));
        return new Hierarchy(ORDER, "order-placed", T0, List.of(order));
    }
}
