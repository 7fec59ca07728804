package dev.coop;

/** Payload types shared by the scenario tests. */
final class Payloads {
    private Payloads() {
    }

    record Order(String id, int amount) {
    }

    record Empty() {
    }
}
