package dev.coop;

import dev.coop.failure.CoopValidationException;

import java.util.Objects;
import java.util.UUID;

/** The identity of a message (a UUIDv7). A message launched on the global scope also names its hierarchy. */
public record MessageId(UUID value) {
    public MessageId {
        Objects.requireNonNull(value, "message id");
    }

    /** Parses the canonical UUID text form; a malformed id is a {@link CoopValidationException}. */
    public static MessageId parse(String text) {
        try {
            return new MessageId(Ids.uuid(Objects.requireNonNull(text, "message id")));
        } catch (IllegalArgumentException e) {
            throw new CoopValidationException("Not a message id (a UUID was expected): '" + text + "'", e);
        }
    }

    @Override
    public String toString() {
        return value.toString();
    }
}
