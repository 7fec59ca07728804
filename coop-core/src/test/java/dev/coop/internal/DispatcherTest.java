package dev.coop.internal;

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
}
