package dev.coop.join;

/** What {@link Joins#attach(JoinId, dev.coop.MessageId)} did. */
public enum AttachResult {
    /** The message is now a member of the join. */
    ATTACHED,
    /** The message was a member already; nothing changed. */
    ALREADY_ATTACHED
}
