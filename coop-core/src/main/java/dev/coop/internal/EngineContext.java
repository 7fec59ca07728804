package dev.coop.internal;

import dev.coop.CooperationStrategy;

import dev.coop.Saga;
import javax.sql.DataSource;

/** What an engine's workers share: read-only after start. */
record EngineContext(
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

    /** The saga's own strategy, or the engine's. */
    dev.coop.CooperationStrategy strategyOf(Saga<?> saga) {
        return saga.strategy() != null ? saga.strategy() : strategy;
    }
}
