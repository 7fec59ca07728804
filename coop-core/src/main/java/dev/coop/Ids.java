package dev.coop;

import java.util.UUID;
import java.util.regex.Pattern;

/** Strict parsing of ids: only the canonical 8-4-4-4-12 hexadecimal form ({@code UUID.fromString} takes "1-1-1-1-1"). */
final class Ids {
    private static final Pattern CANONICAL = Pattern
            .compile("[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");

    private Ids() {
    }

    /** The UUID of {@code text} in canonical form (surrounding white space ignored). */
    static UUID uuid(String text) {
        String s = text.strip();
        if (!CANONICAL.matcher(s).matches()) {
            throw new IllegalArgumentException("not a canonical UUID (8-4-4-4-12 hexadecimal digits)");
        }
        return UUID.fromString(s);
    }
}
