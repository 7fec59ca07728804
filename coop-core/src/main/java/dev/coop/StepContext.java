package dev.coop;

import java.sql.Connection;
import java.util.UUID;

/**
 * Everything a step can see and do. Valid only while the step runs, on the thread that runs it.
 *
 * @param <P> the payload type of the saga's topic
 */
public interface StepContext<P> {
    /** The message's payload, read as the topic's payload type. */
    P payload();

    /** The message this run handles. */
    MessageId messageId();

    /** The name of the saga. */
    String saga();

    /** The name of the step running now. */
    String step();

    /** This run's id: the last element of its lineage. */
    UUID runId();

    /** This run's place in the cooperation tree. */
    Lineage lineage();

    /** The attempt of this step under its retry policy, starting at 1. */
    int attempt();

    /**
     * Throws a {@link GaveUpException} when this run's scope (or one above it) was cancelled, so a long step can
     * stop early. The step's transaction then rolls back and the run rolls back. Coop also checks at every step
     * boundary.
     */
    void giveUpIfRequested();

    /** The engine instance running this step. */
    String engineId();

    /**
     * The step's JDBC connection: business writes made here commit or roll back together with the step and the
     * messages it launches. Do not commit, roll back or close it; Coop does.
     */
    Connection connection();

    /**
     * Launches a message in this run's scope: every saga registered for the topic handles it, and the next step of
     * this run starts only after all of those runs (and their children) finished. The message is written when the
     * step commits; nothing escapes if the step fails.
     */
    <T> MessageId launch(Topic<T> topic, T payload);

    /** Launches a message that starts a new, independent hierarchy; this run does not wait for it. */
    <T> MessageId launchOnGlobalScope(Topic<T> topic, T payload);
}
