package dev.coop.join;

import dev.coop.MessageId;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.OffsetDateTime;
import java.util.List;

/**
 * A join as stored: its settings, counters and members. Counters keep following members that finish after the join
 * ended (a timeout, say); the {@link JoinResult} it published holds the counts at the moment it ended.
 *
 * @param id the join
 * @param key its grouping key, or null
 * @param status where it stands
 * @param expected how many members it waits for
 * @param attached members attached so far
 * @param completed members completed
 * @param failed members failed
 * @param failIfAnyFailed whether a failed member makes the join fail
 * @param metadata the metadata given at start, or a JSON null
 * @param onCompleteTopic the topic of the message published on completion
 * @param onFailTopic the topic of the message published on failure or timeout
 * @param timeoutAt when it times out (by the engine's time), or null
 * @param createdAt when it started
 * @param finishedAt when it ended, or null while open
 * @param outcomeMessage the message it published when it ended, or null while open
 * @param members every member, in the order they were attached
 */
public record JoinView(JoinId id, String key, JoinStatus status, int expected, int attached, int completed,
        int failed, boolean failIfAnyFailed, JsonNode metadata, String onCompleteTopic, String onFailTopic,
        OffsetDateTime timeoutAt, OffsetDateTime createdAt, OffsetDateTime finishedAt, MessageId outcomeMessage,
        List<Member> members) {

    public JoinView {
        members = List.copyOf(members);
    }

    /**
     * One member of a join.
     *
     * @param message the message id (a Coop message, or the id of work reported explicitly)
     * @param state where it stands
     * @param reported whether an explicit report settled it (false: its runs finished, or it is pending)
     * @param attachedAt when it was attached
     * @param settledAt when it was settled, or null while pending
     */
    public record Member(MessageId message, JoinMemberState state, boolean reported, OffsetDateTime attachedAt,
            OffsetDateTime settledAt) {
    }
}
