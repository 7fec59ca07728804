package dev.coop.internal.client;

import dev.coop.internal.store.Json;
import dev.coop.internal.store.SchemaName;
import dev.coop.internal.store.Store;
import dev.coop.internal.store.Time;
import dev.coop.internal.store.Tx;
import java.util.function.ObjIntConsumer;
import javax.sql.DataSource;

/**
 * What every part of a client shares: its database, its store (the statements of a launch and of the reads), the
 * payload mapper, the time it reads, and how it wakes the engine it belongs to.
 *
 * @param localWake wakes the engine this client belongs to: a saga and how many of its runs became due (0: not
 *        known); does nothing for a client without an engine
 */
public record ClientContext(DataSource dataSource, Store store, Json json, Time time,
        ObjIntConsumer<String> localWake) {

    public SchemaName schema() {
        return store.schema();
    }

    /** Runs {@code work} in a transaction of its own; {@code what} names it in the error message. */
    public <T> T inTransaction(String what, Tx.Work<T> work) {
        return Tx.run(dataSource, what, work);
    }
}
