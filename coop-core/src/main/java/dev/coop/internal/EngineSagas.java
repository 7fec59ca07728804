package dev.coop.internal;

import dev.coop.Saga;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The sagas an engine runs, by name and version: what its workers claim (a run only with the version it was created
 * with) and what it registers. Read-only after start.
 */
public final class EngineSagas {
    private final Map<String, NavigableMap<Integer, Saga<?>>> byName = new LinkedHashMap<>();
    private final Map<String, int[]> versions = new LinkedHashMap<>();
    /** Per saga with several versions: which version its next claim tries first (a turn each, so none starves). */
    private final Map<String, AtomicInteger> turns = new LinkedHashMap<>();

    /** The sagas as validated by the engine's builder (name and version unique, one topic per name). */
    public EngineSagas(Collection<Saga<?>> sagas) {
        for (Saga<?> saga : sagas) {
            byName.computeIfAbsent(saga.name(), n -> new TreeMap<>()).put(saga.version(), saga);
        }
        byName.forEach((name, v) -> {
            versions.put(name, v.descendingKeySet().stream().mapToInt(Integer::intValue).toArray());
            turns.put(name, new AtomicInteger());
        });
    }

    /** {@code <saga>@<version>}: how the engine names a saga version to the database (the quiet wake-ups of {@code store.Wakes}, engine). */
    public static String key(String saga, int version) {
        return saga + "@" + version;
    }

    /** The saga names. */
    public Set<String> names() {
        return byName.keySet();
    }

    /** The given version of a saga, or null when this engine does not have it. */
    public Saga<?> get(String name, int version) {
        NavigableMap<Integer, Saga<?>> v = byName.get(name);
        return v == null ? null : v.get(version);
    }

    /** The highest version of a saga this engine has (its topic, worker limit), or null. */
    public Saga<?> newest(String name) {
        NavigableMap<Integer, Saga<?>> v = byName.get(name);
        return v == null ? null : v.lastEntry().getValue();
    }

    /** Whether a version of the saga opted out of sharing transactions with other runs' steps. */
    public boolean anyTransactionPerStep(String name) {
        NavigableMap<Integer, Saga<?>> v = byName.get(name);
        return v != null && v.values().stream().anyMatch(Saga::transactionPerStep);
    }

    /** The versions of a saga this engine has, highest first. */
    public int[] versions(String name) {
        return versions.get(name);
    }

    /**
     * The versions of a saga in the order the next claim tries them: highest first when there is one, otherwise
     * starting one further at each call.
     */
    public int[] claimOrder(String name) {
        int[] all = versions.get(name);
        if (all.length == 1) {
            return all;
        }
        int first = Math.floorMod(turns.get(name).getAndIncrement(), all.length);
        int[] order = new int[all.length];
        for (int i = 0; i < all.length; i++) {
            order[i] = all[(first + i) % all.length];
        }
        return order;
    }

    /** Every saga version, as {@link #key} names it. */
    public List<String> keys() {
        return byName.values().stream().flatMap(v -> v.values().stream())
                .map(s -> key(s.name(), s.version())).toList();
    }

    /** Every saga version. */
    public List<Saga<?>> all() {
        return byName.values().stream().flatMap(v -> v.values().stream()).toList();
    }
}
