package dev.coop.internal.store;

import dev.coop.RunStatus;

/** A run that did not commit, as its parent sees it. */
public record ChildFailure(RunStatus status, String failure) {
}
