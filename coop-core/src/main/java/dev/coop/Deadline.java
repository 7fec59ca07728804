package dev.coop;

import dev.coop.failure.CoopValidationException;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A point in time by which a run must be done (with its happy path, its rollback, or both: see {@link Deadlines}).
 * Stored in the {@link CooperationContext}, so children inherit it; they can only tighten it: when two deadlines
 * meet, the earlier one wins and the trace records the one it replaced.
 *
 * @param at when the deadline passes (compared with the engine's time, see {@link dev.coop.TimeSource})
 * @param source who set it: free text, e.g. {@code "checkout-api"}; Coop uses {@code saga[step]} inside steps
 * @param trace the deadlines this one tightened, oldest first, each as {@code "<at> from <source>"}
 */
public record Deadline(Instant at, String source, List<String> trace) {
    public Deadline {
        Objects.requireNonNull(at, "at");
        if (source == null || source.isBlank()) {
            throw new CoopValidationException("A deadline needs a source (who set it), got '" + source + "'");
        }
        trace = trace == null ? List.of() : List.copyOf(trace);
    }

    /** A deadline at {@code at}, set by {@code source}. */
    public static Deadline at(Instant at, String source) {
        return new Deadline(at, source, List.of());
    }

    /**
     * The earlier of this deadline and {@code other}. When {@code other} is earlier, it replaces this one and its
     * trace records this one; when it is not, this one stays as it is.
     */
    public Deadline tightenedBy(Deadline other) {
        if (other == null || !other.at.isBefore(at)) {
            return this;
        }
        List<String> t = new ArrayList<>(trace);
        t.addAll(other.trace);
        t.add(at + " from " + source);
        return new Deadline(other.at, other.source, t);
    }

    /** One line: when, who set it, and what it tightened. */
    public String describe() {
        return at + " (set by " + source + (trace.isEmpty() ? "" : "; tightened from " + String.join(", ", trace))
                + ")";
    }
}
