package dev.coop.internal.step;

import dev.coop.internal.store.Due;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class DispatcherTest {
    private static final long NEVER = TimeUnit.DAYS.toNanos(1);

    @Test
    void a_due_time_asked_for_while_a_probe_runs_survives_the_probes_stale_result() throws Exception {
        Dispatcher dispatcher = new Dispatcher(List.of("s"), NEVER);
        assertThat(dispatcher.next().isProbe()).isTrue(); // the first probe is in flight
        dispatcher.dueIn(50); // a step committed meanwhile: its run is due in 50 ms
        dispatcher.probed(Map.of()); // what the probe read predates that commit
        CompletableFuture<Dispatcher.Task> next = CompletableFuture.supplyAsync(() -> {
            try {
                return dispatcher.next();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        try {
            assertThat(next.get(Duration.ofSeconds(10).toMillis(), TimeUnit.MILLISECONDS).isProbe())
                    .as("the next probe comes at the due time, not a poll interval later").isTrue();
        } finally {
            dispatcher.stop();
        }
    }

    /** The first probe of a new dispatcher, answered with nothing due: afterwards only wake-ups give tasks. */
    private static Dispatcher afterFirstProbe() throws InterruptedException {
        Dispatcher dispatcher = new Dispatcher(List.of("s", "t"), NEVER);
        assertThat(dispatcher.next().isProbe()).isTrue();
        dispatcher.probed(Map.of());
        return dispatcher;
    }

    /** The next task, or null when none comes within a moment (the dispatcher only ever waits for a signal). */
    private static Dispatcher.Task nextOrNone(Dispatcher dispatcher) throws Exception {
        CompletableFuture<Dispatcher.Task> next = CompletableFuture.supplyAsync(() -> {
            try {
                return dispatcher.next();
            } catch (InterruptedException e) {
                return null;
            }
        });
        try {
            return next.get(200, TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            dispatcher.stop(); // releases the waiting thread; the test's dispatcher is done
            return null;
        }
    }

    @Test
    void runs_made_due_by_this_engine_get_exactly_one_claim_each() throws Exception {
        Dispatcher dispatcher = afterFirstProbe();
        dispatcher.wake("s", 2);
        Dispatcher.Task first = dispatcher.next();
        Dispatcher.Task second = dispatcher.next();
        assertThat(List.of(first, second)).allSatisfy(task -> {
            assertThat(task.saga()).isEqualTo("s");
            assertThat(task.counted()).isTrue();
        });
        dispatcher.found(first); // a counted claim that found its run asks nobody else to look
        dispatcher.empty(second); // nor does one that found nothing (another claim was quicker)
        assertThat(nextOrNone(dispatcher)).as("no third claim for two runs").isNull();
    }

    /**
     * Claim A is owed for run X and reads the database before run Y commits; Y is woken here and claim B, owed for Y,
     * takes X (the earliest due run); A finds X locked and cannot see Y. Without a retry, Y would wait for the next
     * probe (up to the poll interval: seen in W1 as runs that waited 0.2-1 s to be claimed). The retry is owed once.
     */
    @Test
    void a_counted_claim_that_found_nothing_while_another_run_was_woken_is_owed_once_more() throws Exception {
        Dispatcher dispatcher = afterFirstProbe();
        dispatcher.wake("s", 1); // run X
        Dispatcher.Task a = dispatcher.next();
        dispatcher.wake("s", 1); // run Y, committed after A's snapshot
        Dispatcher.Task b = dispatcher.next();
        dispatcher.found(b); // B took X
        dispatcher.empty(a); // A found X locked and did not see Y
        Dispatcher.Task retry = dispatcher.next();
        assertThat(retry.saga()).isEqualTo("s");
        assertThat(retry.counted()).isTrue();
        assertThat(retry.retry()).isTrue();
        dispatcher.wake("s", 1); // run Z, woken while the retry runs
        Dispatcher.Task c = dispatcher.next();
        assertThat(c.retry()).isFalse();
        dispatcher.found(c);
        dispatcher.empty(retry); // a retry that finds nothing is not owed again
        assertThat(nextOrNone(dispatcher)).as("no claim after the retry").isNull();
    }

    @Test
    void a_wake_up_that_does_not_say_how_many_runs_are_due_searches_until_a_claim_finds_nothing() throws Exception {
        Dispatcher dispatcher = afterFirstProbe();
        dispatcher.wake("s"); // a notification
        dispatcher.wake("s", 1); // a launch here meanwhile: the saga is searched already, and stays so
        Dispatcher.Task first = dispatcher.next();
        assertThat(first.counted()).isFalse();
        dispatcher.found(first);
        Dispatcher.Task second = dispatcher.next();
        assertThat(second.saga()).isEqualTo("s");
        assertThat(second.counted()).isFalse();
        dispatcher.empty(second);
        assertThat(nextOrNone(dispatcher)).as("searching ends at the first claim that found nothing").isNull();
    }

    @Test
    void counted_claims_add_up_and_a_probe_turns_them_into_a_search() throws Exception {
        Dispatcher dispatcher = afterFirstProbe();
        dispatcher.wake("t", 1);
        dispatcher.wake("t", 1);
        assertThat(dispatcher.next().counted()).isTrue();
        dispatcher.probeNow();
        assertThat(dispatcher.next().counted()).isTrue(); // the second owed claim comes before the probe
        assertThat(dispatcher.next().isProbe()).isTrue();
        dispatcher.probed(Map.of("t", new Due(0, null)));
        Dispatcher.Task searched = dispatcher.next();
        assertThat(searched.saga()).isEqualTo("t");
        assertThat(searched.counted()).as("a probe does not say how many runs are due").isFalse();
        dispatcher.empty(searched);
        assertThat(nextOrNone(dispatcher)).isNull();
    }
}
