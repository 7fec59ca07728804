package dev.coop.join;

/** Where one member (message) of a join stands. */
public enum JoinMemberState {
    /** Not finished yet: some run of the message still runs, or nobody reported it. */
    PENDING,
    /** Every run of the message committed (or it had none), or it was reported completed. */
    COMPLETED,
    /** A run of the message rolled back or failed to, or it was reported failed. */
    FAILED
}
