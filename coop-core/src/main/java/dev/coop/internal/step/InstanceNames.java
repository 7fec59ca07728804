package dev.coop.internal.step;

import dev.coop.internal.store.LogNames;

import dev.coop.Saga;

/** How the log names a run's step instances and their rollbacks. */
final class InstanceNames {
    private InstanceNames() {
    }

    /** The log name of an executed instance: the step's name, marked when it was a child-failure handler run. */
    static String instanceName(Saga<?> saga, int instance) {
        return instance >= 0
                ? saga.steps().get(instance).name()
                : saga.steps().get(-1 - instance).name() + " (child failure handler)";
    }

    static String rollbackOf(String name) {
        return LogNames.ROLLBACK_PREFIX + name;
    }

    static String childRollbackOf(String name) {
        return LogNames.ROLLBACK_PREFIX + name + LogNames.CHILDREN_SUFFIX;
    }
}
