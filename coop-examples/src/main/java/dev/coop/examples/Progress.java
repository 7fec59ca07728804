package dev.coop.examples;

import java.io.PrintStream;

/**
 * Where the demo's services tell what they do, as they do it: one line per step execution or compensation, with the
 * time since the scenario started, so the order in which things happened is visible.
 */
public interface Progress {
    /** A step (or compensation, or child-failure handler) of {@code saga} on engine {@code engineId} says something. */
    void step(String engineId, String saga, String step, String text);

    /** A new scenario starts: times are counted from now. */
    default void restart() {
    }

    /** Says nothing; for tests. */
    static Progress silent() {
        return (engineId, saga, step, text) -> {
        };
    }

    /** Prints {@code +  12 ms  crm       crm / create-customer          customer 'Ada' created}. */
    static Progress printingTo(PrintStream out) {
        return new Progress() {
            private volatile long start = System.nanoTime();

            @Override
            public void restart() {
                start = System.nanoTime();
            }

            @Override
            public void step(String engineId, String saga, String step, String text) {
                long ms = (System.nanoTime() - start) / 1_000_000;
                int dash = engineId.lastIndexOf('-');
                String service = dash < 0 ? engineId : engineId.substring(0, dash);
                String name = step.startsWith("Rollback of ") ? step.substring("Rollback of ".length()) : step;
                synchronized (out) {
                    out.printf("  %5d ms  %-9s %-44s %s%n", ms, service, saga + " / " + name, text);
                }
            }
        };
    }
}
