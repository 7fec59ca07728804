package dev.coop.internal;

import dev.coop.Saga;
import java.util.Map;
import javax.sql.DataSource;

/** What an engine's workers share: read-only after start. */
record EngineContext(
        String engineId,
        DataSource dataSource,
        Store store,
        Json json,
        Map<String, Saga<?>> sagas,
        Dispatcher dispatcher,
        Completions completions) {
}
