package dev.coop.join;

import dev.coop.MessageId;
import dev.coop.failure.CoopValidationException;

import java.util.Objects;
import java.util.UUID;

/** The identity of a join (a UUIDv7), returned by {@link Joins#start(JoinSpec)}. */
public record JoinId(UUID value) {
    public JoinId {
        Objects.requireNonNull(value, "join id");
    }

    /** Parses the canonical UUID text form; a malformed id is a {@link CoopValidationException}. */
    public static JoinId parse(String text) {
        Objects.requireNonNull(text, "join id");
        try {
            return new JoinId(MessageId.parse(text).value());
        } catch (CoopValidationException e) {
            throw new CoopValidationException("Not a join id (a UUID was expected): '" + text + "'", e.getCause());
        }
    }

    @Override
    public String toString() {
        return value.toString();
    }
}
