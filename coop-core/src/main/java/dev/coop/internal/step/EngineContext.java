package dev.coop.internal.step;

import dev.coop.internal.Completions;
import dev.coop.internal.EngineSagas;
import dev.coop.internal.Listeners;
import dev.coop.internal.store.SagaLimits;
import dev.coop.internal.store.Json;
import dev.coop.internal.store.Store;

import dev.coop.CooperationStrategy;

import dev.coop.Saga;
import javax.sql.DataSource;

/** What an engine's workers share: read-only after start. */
public record EngineContext(
        String engineId,
        DataSource dataSource,
        Store store,
        Json json,
        EngineSagas sagas,
        Dispatcher dispatcher,
        Completions completions,
        dev.coop.CooperationStrategy strategy,
        Listeners listeners,
        SagaLimits limits,
        int databaseTimeoutMillis) {

    /** The source a failure of {@code run} names: its saga on this engine. */
    String source(dev.coop.internal.store.ClaimedRun run) {
        return run.saga() + "[" + engineId + "]";
    }

    /** The saga's own strategy, or the engine's. */
    dev.coop.CooperationStrategy strategyOf(Saga<?> saga) {
        return saga.strategy() != null ? saga.strategy() : strategy;
    }
}
