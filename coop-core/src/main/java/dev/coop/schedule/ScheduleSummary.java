package dev.coop.schedule;

import dev.coop.MessageId;

import java.time.OffsetDateTime;

/**
 * A schedule as stored: what it launches, when, and what it did last. Times are the database's.
 *
 * @param name the schedule's name
 * @param topic the topic its messages are launched on
 * @param payloadJson the payload, as JSON
 * @param schedule when it fires
 * @param nextDue when the next period is due; null when paused or when a cron expression has no time left
 * @param lastDue the due time of the last period fired; null before the first
 * @param lastFiredAt when that period was fired (launched); null before the first
 * @param lastMessage the message launched by the last period fired; null before the first
 * @param skipped how many periods were skipped because the previous period's message still ran
 * @param createdAt when the schedule was created
 * @param updatedAt when its definition last changed
 */
public record ScheduleSummary(String name, String topic, String payloadJson, Schedule schedule,
        OffsetDateTime nextDue, OffsetDateTime lastDue, OffsetDateTime lastFiredAt, MessageId lastMessage,
        long skipped, OffsetDateTime createdAt, OffsetDateTime updatedAt) {

    /** Whether the schedule is paused ({@link Schedule#paused()}). */
    public boolean paused() {
        return schedule.isPaused();
    }
}
