package dev.coop.inspect;

import java.time.OffsetDateTime;

/**
 * The step a run is executing right now: the transaction of an engine that holds the run. Read from the database's
 * own view of its sessions ({@code pg_stat_activity}), so no engine writes anything for it; see docs/inspection.md.
 *
 * @param step the step's name as the log will name it ({@code Rollback of <step>} on the rollback path)
 * @param since when its transaction started (the claim)
 * @param engine the engine instance that runs it; null when the database does not show it (a role that may not see
 *        the engine's sessions)
 * @param attempt which attempt of the step under its retry policy this is, from 1
 * @param lastActivity the last sign of life: when the step's connection last started or finished a statement (its
 *        own queries and Coop's); null when the database does not show it
 */
public record RunningStep(String step, OffsetDateTime since, String engine, int attempt,
        OffsetDateTime lastActivity) {
}
