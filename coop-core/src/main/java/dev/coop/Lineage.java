package dev.coop;

import dev.coop.failure.CoopValidationException;

import java.util.List;
import java.util.Objects;
import java.util.UUID;

/**
 * The cooperation lineage of a run: the root message id, then one id per run on the path from the root to this
 * run. Its last element is the run's own id. A run's descendants are exactly the runs whose lineage starts with
 * this one.
 */
public record Lineage(List<UUID> ids) {
    public Lineage {
        ids = List.copyOf(Objects.requireNonNull(ids, "lineage"));
        if (ids.isEmpty()) {
            throw new CoopValidationException("A lineage has at least one element");
        }
    }

    /** The id of the message that started the whole hierarchy. */
    public UUID root() {
        return ids.getFirst();
    }

    /** The last element: for a run's lineage, the run's id. */
    public UUID last() {
        return ids.getLast();
    }

    /** The number of elements; a run handling a global message has depth 2. */
    public int depth() {
        return ids.size();
    }

    /** True when {@code other} is this lineage or lies below it. */
    public boolean contains(Lineage other) {
        return other.ids.size() >= ids.size() && other.ids.subList(0, ids.size()).equals(ids);
    }

    @Override
    public String toString() {
        return ids.toString();
    }
}
