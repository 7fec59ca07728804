package dev.coop.internal.store;

/** A cancellation of the scope (failure JSON, or null) and the engine's time, in one round trip. */
public record Liveness(String cancellation, java.time.Instant now) {
}
