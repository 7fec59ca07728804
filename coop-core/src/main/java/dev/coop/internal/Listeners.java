package dev.coop.internal;

import dev.coop.CooperationContext;
import dev.coop.EngineListener;
import dev.coop.StepContext;
import java.time.Duration;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The listeners of an engine or client, called in order; whatever one throws is logged and ignored, so that no
 * listener can change what a step does.
 */
public final class Listeners {
    private static final Logger log = LoggerFactory.getLogger(Listeners.class);
    public static final Listeners NONE = new Listeners(List.of());

    private final EngineListener[] all;
    /** The first listener that wraps step code in a framework's transaction, or null. */
    private final StepTransactionHook transactionHook;

    public Listeners(List<EngineListener> listeners) {
        this.all = listeners.toArray(EngineListener[]::new);
        this.transactionHook = listeners.stream().filter(StepTransactionHook.class::isInstance)
                .map(StepTransactionHook.class::cast).findFirst().orElse(null);
    }

    public StepTransactionHook transactionHook() {
        return transactionHook;
    }

    /** Whether there is none: the hot path then skips the calls. */
    public boolean isEmpty() {
        return all.length == 0;
    }

    public Object[] stepStarted(StepContext<?> step, EngineListener.Part part) {
        Object[] states = new Object[all.length];
        for (int i = 0; i < all.length; i++) {
            try {
                states[i] = all[i].stepStarted(step, part);
            } catch (RuntimeException | LinkageError e) {
                failed(all[i], "stepStarted", e);
            }
        }
        return states;
    }

    /** Ends in reverse order of the starts, so that scopes opened by the starts close innermost first. */
    public void stepEnded(StepContext<?> step, EngineListener.Part part, Object[] states,
            EngineListener.Outcome outcome,
            long nanos, Throwable failure) {
        for (int i = all.length - 1; i >= 0; i--) {
            try {
                all[i].stepEnded(step, part, states[i], outcome, nanos, failure);
            } catch (RuntimeException | LinkageError e) {
                failed(all[i], "stepEnded", e);
            }
        }
    }

    public void claimed(String saga, Duration waited) {
        for (EngineListener l : all) {
            try {
                l.claimed(saga, waited);
            } catch (RuntimeException | LinkageError e) {
                failed(l, "claimed", e);
            }
        }
    }

    public void barrierPassed(String saga, Duration waited) {
        for (EngineListener l : all) {
            try {
                l.barrierPassed(saga, waited);
            } catch (RuntimeException | LinkageError e) {
                failed(l, "barrierPassed", e);
            }
        }
    }

    public void databaseRetry(String saga, Throwable cause) {
        for (EngineListener l : all) {
            try {
                l.databaseRetry(saga, cause);
            } catch (RuntimeException | LinkageError e) {
                failed(l, "databaseRetry", e);
            }
        }
    }

    public void notificationsConnected() {
        for (EngineListener l : all) {
            try {
                l.notificationsConnected();
            } catch (RuntimeException | LinkageError e) {
                failed(l, "notificationsConnected", e);
            }
        }
    }

    public void notificationsLost(Throwable cause) {
        for (EngineListener l : all) {
            try {
                l.notificationsLost(cause);
            } catch (RuntimeException | LinkageError e) {
                failed(l, "notificationsLost", e);
            }
        }
    }

    public void connectionsStarved(java.time.Duration waited) {
        for (EngineListener l : all) {
            try {
                l.connectionsStarved(waited);
            } catch (RuntimeException | LinkageError e) {
                failed(l, "connectionsStarved", e);
            }
        }
    }

    public void roundCommitted(String saga, int claimed, int executed) {
        for (EngineListener l : all) {
            try {
                l.roundCommitted(saga, claimed, executed);
            } catch (RuntimeException | LinkageError e) {
                failed(l, "roundCommitted", e);
            }
        }
    }

    public void connectionsAvailable() {
        for (EngineListener l : all) {
            try {
                l.connectionsAvailable();
            } catch (RuntimeException | LinkageError e) {
                failed(l, "connectionsAvailable", e);
            }
        }
    }

    /** The context to store with a message launched on {@code topic}; a listener that fails leaves it unchanged. */
    public CooperationContext launching(String topic, CooperationContext context) {
        CooperationContext result = context;
        for (EngineListener l : all) {
            try {
                CooperationContext next = l.launching(topic, result);
                if (next != null) {
                    result = next;
                }
            } catch (RuntimeException | LinkageError e) {
                failed(l, "launching", e);
            }
        }
        return result;
    }

    private static void failed(EngineListener listener, String method, Throwable e) {
        log.warn("Engine listener {} failed in {}; ignored", listener.getClass().getName(), method, e);
    }
}
