package dev.coop.docs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.CoopEngine;
import dev.coop.CooperationContext;
import dev.coop.Deadline;
import dev.coop.Deadlines;
import dev.coop.MessageId;
import dev.coop.Saga;
import dev.coop.Topic;
import dev.coop.inspect.Outcome;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import dev.coop.test.CoopTables;
import dev.coop.test.TestClock;
import java.time.Duration;
import java.time.Instant;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The guide's samples (docs/guide) of sleeps, delayed launches and deadlines, run with a test clock. */
class TimeSamplesTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    static final Duration WAIT = Duration.ofSeconds(30);

    record Subscription(String id, Instant renewsAt) {
    }

    record Reminder(String text) {
    }

    record Checkout(String orderId) {
    }

    record Reserve(String orderId) {
    }

    static final Topic<Subscription> SUBSCRIBED = Topic.of("subscribed", Subscription.class);
    static final Topic<Reminder> REMINDER = Topic.of("reminder", Reminder.class);
    static final Topic<Checkout> CHECKOUT = Topic.of("checkout", Checkout.class);
    static final Topic<Reserve> RESERVE = Topic.of("reserve", Reserve.class);

    @Test
    void sleeps_and_delayed_launches_wait_for_their_time(DataSource dataSource) {
        TestClock clock = new TestClock(Instant.parse("2026-12-31T09:00:00Z"));
        Saga<Subscription> renewals = Saga.on(SUBSCRIBED, "renewals")
                .step("welcome", step -> {
                })
                // tag::sleep[]
                .sleep("cool-off", Duration.ofHours(24)) // the next step starts a day later
                .sleepUntil("at-renewal", step -> step.payload().renewsAt()) // or at an instant computed by the step
                // end::sleep[]
                .step("renew", step -> {
                })
                .build();
        Saga<Reminder> reminders = Saga.on(REMINDER, "reminders").step("send", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(dataSource).clock(clock).register(renewals, reminders).start()) {
            CoopClient client = engine.client();
            MessageId renewal = client.launch(SUBSCRIBED,
                    new Subscription("s-1", Instant.parse("2027-01-05T00:00:00Z")));
            Reminder reminder = new Reminder("happy new year");
            // tag::delayed-launch[]
            MessageId id = client.launch(REMINDER, reminder, Instant.parse("2027-01-01T09:00:00Z")); // a delayed launch
            // end::delayed-launch[]
            CoopTables tables = CoopTables.of(dataSource);
            Await.until("everything waits", WAIT, () -> tables.idleAt(clock.now()));
            clock.advance(Duration.ofDays(1));
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            Await.until("the renewal waits", WAIT, () -> tables.idleAt(clock.now()));
            clock.advance(Duration.ofDays(4));
            assertThat(client.awaitCompletion(renewal, WAIT)).isEqualTo(Outcome.COMMITTED);
        }
    }

    @Test
    void a_missed_deadline_rolls_the_run_back(DataSource dataSource) {
        TestClock clock = new TestClock();
        Checkout order = new Checkout("o-1");
        Reserve r = new Reserve("o-1");
        Saga<Checkout> checkout = Saga.on(CHECKOUT, "checkout")
                // tag::deadline-step[]
                // a tighter deadline for this child only
                .step("reserve", step -> step.launch(RESERVE, r, CooperationContext.of(Deadlines.HAPPY_PATH,
                        Deadline.at(step.startedAt().plusSeconds(5), "reserve must be quick"))))
                // end::deadline-step[]
                .build();
        Saga<Reserve> reserving = Saga.on(RESERVE, "reserving")
                .step("wait-for-stock", step -> {
                })
                .sleep("restock", Duration.ofMinutes(1))
                .step("reserve", step -> {
                })
                .build();
        try (CoopEngine engine = Coop.engine(dataSource).clock(clock).register(checkout, reserving).start()) {
            CoopClient client = engine.client();
            // tag::deadline-launch[]
            MessageId id = client.launch(CHECKOUT, order, CooperationContext.of(Deadlines.HAPPY_PATH,
                    Deadline.at(client.now().plusSeconds(30), "checkout-api")));
            // end::deadline-launch[]
            CoopTables tables = CoopTables.of(dataSource);
            Await.until("the reservation sleeps", WAIT, () -> tables.idleAt(clock.now()));
            clock.advance(Duration.ofSeconds(5));
            assertThat(client.awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
        }
    }
}
