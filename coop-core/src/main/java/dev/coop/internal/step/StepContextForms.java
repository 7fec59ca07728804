package dev.coop.internal.step;

import dev.coop.CooperationContext;
import dev.coop.LaunchOptions;
import dev.coop.MessageId;
import dev.coop.StepContext;
import dev.coop.Topic;
import java.time.Instant;

/**
 * The shorthand forms of a {@link StepContext}'s launches and external tasks, each the general form with its options:
 * a step context implements {@link #launch(Topic, Object, LaunchOptions)},
 * {@link #launchOnGlobalScope(Topic, Object, LaunchOptions)} and {@link #open}.
 */
abstract class StepContextForms<P> implements StepContext<P> {
    @Override
    public dev.coop.ExternalTask openTask(String name, Object payload, dev.coop.TaskOptions options) {
        return open(name, payload, options, false);
    }

    @Override
    public dev.coop.ExternalTask awaitSignal(String name, String key) {
        return open(name, java.util.Map.of("signal", key), dev.coop.TaskOptions.none().key(key), true);
    }

    @Override
    public dev.coop.ExternalTask awaitSignal(String name, String key, java.time.Duration timeout) {
        return open(name, java.util.Map.of("signal", key), dev.coop.TaskOptions.none().key(key).timeout(timeout),
                true);
    }

    /** Opens an external task: a signal's ({@code signal}: completed by a signal sent to its key), or any other. */
    abstract dev.coop.ExternalTask open(String name, Object payload, dev.coop.TaskOptions options, boolean signal);

    @Override
    public <T> MessageId launch(Topic<T> topic, T payload) {
        return launch(topic, payload, LaunchOptions.none());
    }

    @Override
    public <T> MessageId launch(Topic<T> topic, T payload, CooperationContext extra) {
        return launch(topic, payload, LaunchOptions.none().context(extra));
    }

    @Override
    public <T> MessageId launchOnGlobalScope(Topic<T> topic, T payload) {
        return launchOnGlobalScope(topic, payload, LaunchOptions.none());
    }

    @Override
    public <T> MessageId launchOnGlobalScope(Topic<T> topic, T payload, CooperationContext extra) {
        return launchOnGlobalScope(topic, payload, LaunchOptions.none().context(extra));
    }

    @Override
    public <T> MessageId launch(Topic<T> topic, T payload, Instant at) {
        return launch(topic, payload, LaunchOptions.none().at(at));
    }

    @Override
    public <T> MessageId launch(Topic<T> topic, T payload, CooperationContext extra, Instant at) {
        return launch(topic, payload, LaunchOptions.none().context(extra).at(at));
    }

    @Override
    public <T> MessageId launchOnGlobalScope(Topic<T> topic, T payload, Instant at) {
        return launchOnGlobalScope(topic, payload, LaunchOptions.none().at(at));
    }

    @Override
    public <T> MessageId launchOnGlobalScope(Topic<T> topic, T payload, CooperationContext extra, Instant at) {
        return launchOnGlobalScope(topic, payload, LaunchOptions.none().context(extra).at(at));
    }
}
