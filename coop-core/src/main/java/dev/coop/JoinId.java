package dev.coop;

import java.util.Objects;
import java.util.UUID;

/** The identity of a join (a UUIDv7), returned by {@link Joins#start(JoinSpec)}. */
public record JoinId(UUID value) {
    public JoinId {
        Objects.requireNonNull(value, "join id");
    }

    /** Parses the canonical UUID text form; a malformed id is a {@link CoopValidationException}. */
    public static JoinId parse(String text) {
        try {
            return new JoinId(Ids.uuid(Objects.requireNonNull(text, "join id")));
        } catch (IllegalArgumentException e) {
            throw new CoopValidationException("Not a join id (a UUID was expected): '" + text + "'", e);
        }
    }

    @Override
    public String toString() {
        return value.toString();
    }
}
