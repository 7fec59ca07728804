package dev.coop.internal.read;

import dev.coop.Lineage;
import dev.coop.failure.CoopValidationException;
import java.util.Arrays;
import java.util.UUID;

/**
 * The check that a lineage someone gave names the run it ends in. Both what reads a run (inspection) and what acts on
 * one (operator actions, which depend on the reads) need it, so it lives with the reads.
 */
public final class StoredLineage {
    private StoredLineage() {
    }

    /**
     * Refuses a lineage that is not the stored lineage of its last run (one whose root is another hierarchy's, say),
     * so that an action is never taken on one hierarchy while recorded under another.
     */
    public static void require(Lineage given, UUID[] stored) {
        if (!given.ids().equals(Arrays.asList(stored))) {
            throw new CoopValidationException("lineage " + given + " does not name a run: run " + given.last()
                    + " has lineage " + Arrays.toString(stored)
                    + (stored[0].equals(given.root()) ? "" : ", in the hierarchy of message " + stored[0]));
        }
    }
}
