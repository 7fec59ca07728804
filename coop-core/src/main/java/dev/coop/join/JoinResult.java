package dev.coop.join;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.NullNode;
import java.util.List;
import java.util.UUID;

/**
 * The payload of the one message a join publishes when it finishes, on its on-complete topic
 * ({@link JoinStatus#COMPLETED}) or its on-fail topic ({@link JoinStatus#FAILED}, {@link JoinStatus#TIMED_OUT}).
 * Subscribe a saga to a {@code Topic<JoinResult>} to act on it.
 *
 * @param joinId the join
 * @param key its grouping key, or null
 * @param status how it ended
 * @param metadata the metadata given when it started ({@link NullNode} when none)
 * @param expected the expected count
 * @param attached members attached when it ended
 * @param completed members completed when it ended
 * @param failed members failed when it ended
 * @param members every attached member and its state when the join ended, in the order they were attached
 */
public record JoinResult(UUID joinId, String key, JoinStatus status, JsonNode metadata, int expected, int attached,
        int completed, int failed, List<Member> members) {

    public JoinResult {
        metadata = metadata == null ? NullNode.getInstance() : metadata;
        members = members == null ? List.of() : List.copyOf(members);
    }

    /** One member: a message id and its state when the join ended. */
    public record Member(UUID messageId, JoinMemberState state) {
    }
}
