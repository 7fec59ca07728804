package dev.coop.internal.read;

import dev.coop.MessageId;
import dev.coop.RunStatus;
import dev.coop.inspect.RunOrdering;
import java.time.OffsetDateTime;
import java.util.UUID;

/** A run row, before its steps and children are attached. */
record TreeRow(UUID id, MessageId message, String topic, String saga, UUID[] lineage, UUID parent,
        RunStatus status, boolean rollingBack, OffsetDateTime created, OffsetDateTime started,
        OffsetDateTime finished, String failure, int sagaVersion, RunOrdering ordering) {
}
