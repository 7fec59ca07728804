package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.StepRoundTest.Rounds;
import dev.coop.inspect.Outcome;
import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import dev.coop.test.Invariants;
import dev.coop.test.TestClock;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Two engines whose rounds lock the same business rows in opposite order, with the deadlock forced: each round's
 * first step locks one row and waits until the other round's first step locked the other, then each round's second
 * step asks for the row the other round holds. PostgreSQL breaks the deadlock by failing one of the two statements;
 * that step rolls back to its own savepoint and is retried later, its round commits the rest, and every step
 * commits exactly once.
 */
class StepRoundDeadlockTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    @BeforeAll
    static void tables(DataSource dataSource) throws SQLException {
        StepRoundTest.tables(dataSource);
    }

    /**
     * A saga whose first step adds one to the account its payload names ({@code "hold:<id>"} or {@code "<id>"});
     * a {@code hold} step then waits until both rounds hold their first row.
     */
    static Saga<String> lockingSaga(String name, CountDownLatch bothHoldOne, AtomicInteger deadlocks) {
        return Saga.on(Topic.of(name, String.class), name)
                .step("work", step -> {
                    String[] parts = step.payload().split(":");
                    try (PreparedStatement ps = step.connection()
                            .prepareStatement("UPDATE round_account SET n = n + 1 WHERE id = ?")) {
                        ps.setInt(1, Integer.parseInt(parts[parts.length - 1]));
                        ps.executeUpdate();
                    } catch (SQLException e) {
                        if ("40P01".equals(e.getSQLState())) {
                            deadlocks.incrementAndGet();
                        }
                        throw e;
                    }
                    if (parts[0].equals("hold")) {
                        bothHoldOne.countDown();
                        if (!bothHoldOne.await(StepRoundTest.WAIT.toSeconds(), TimeUnit.SECONDS)) {
                            throw new IllegalStateException("the other round never locked its first row");
                        }
                    }
                })
                .step("after", step -> {
                })
                .build();
    }

    /** Whether a run's step met database trouble and waits to be retried (written with its round's commit). */
    private static boolean postponed(DataSource dataSource) {
        try {
            return StepRoundTest.count(dataSource, "SELECT count(*)::int FROM coop.run WHERE retries > ?", 0) > 0;
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void rounds_of_two_engines_that_deadlock_on_business_rows_commit_every_step_once_and_nothing_stalls(
            DataSource dataSource) throws Exception {
        CountDownLatch bothHoldOne = new CountDownLatch(2);
        AtomicInteger deadlocks = new AtomicInteger();
        Saga<String> first = lockingSaga("deadlock-first", bothHoldOne, deadlocks);
        Saga<String> second = lockingSaga("deadlock-second", bothHoldOne, deadlocks);
        // frozen, so that the first steps' wait does not spend the rounds' time budget; moved on once PostgreSQL
        // failed one step of the deadlock and its round postponed it, so that the step comes due again
        TestClock clock = new TestClock();
        CoopClient client = CoopClient.builder(dataSource).clock(clock).build();
        Coop.engine(dataSource).workers(1).clock(clock).register(first, second).start().close();
        // launched while no engine runs, so that each engine's first claim takes its saga's two runs in one round
        List<MessageId> ids = List.of(client.launch(first.topic(), "hold:1"), client.launch(first.topic(), "2"),
                client.launch(second.topic(), "hold:2"), client.launch(second.topic(), "1"));
        Rounds firstRounds = new Rounds();
        Rounds secondRounds = new Rounds();
        try (CoopEngine a = Coop.engine(db.newDataSource(3)).workers(1).maxRunsPerTransaction(8).clock(clock)
                .pollInterval(Duration.ofMillis(100)).listener(firstRounds).register(first).start();
                CoopEngine b = Coop.engine(db.newDataSource(3)).workers(1).maxRunsPerTransaction(8).clock(clock)
                        .pollInterval(Duration.ofMillis(100)).listener(secondRounds).register(second).start()) {
            Await.until("the step PostgreSQL failed is postponed", StepRoundTest.WAIT, () -> postponed(dataSource));
            clock.advance(Duration.ofMinutes(1));
            for (MessageId id : ids) {
                assertThat(client.awaitCompletion(id, StepRoundTest.WAIT)).isEqualTo(Outcome.COMMITTED);
                assertThat(StepRoundTest.workSteps(client, id)).as("committed once").isEqualTo(1);
                Invariants.assertAll(client.events(id));
            }
            assertThat(StepRoundTest.count(dataSource, "SELECT count(*)::int FROM round_account WHERE n = ?", 2))
                    .as("each account counted by two steps, once each").isEqualTo(2);
            assertThat(StepRoundTest.count(dataSource, "SELECT sum(n)::int FROM round_account WHERE id > ?", 0))
                    .isEqualTo(4);
            assertThat(firstRounds.first()).as("the first engine's round of 2").containsExactly(2, 2);
            assertThat(secondRounds.first()).as("the second engine's round of 2")
                    .containsExactly(2, 2);
            assertThat(deadlocks.get()).as("PostgreSQL broke one deadlock").isEqualTo(1);
        }
    }
}
