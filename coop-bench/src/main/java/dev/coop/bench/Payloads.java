package dev.coop.bench;

/** Payload types of the workloads (small, like a typical message id plus a number). */
public final class Payloads {
    private Payloads() {
    }

    /** A unit of work. */
    public record Job(int n) {
    }

    /** One level of a W3 chain. */
    public record Level(int level) {
    }
}
