package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The packages under {@code dev.coop.internal} (the package itself and each sub-package) depend on each other one
 * way: no import cycle among them. A cycle makes every package in it one unit that can only be read, tested and
 * changed whole (issue 37: the store's row types once lived in the step path, and every internal package depended on
 * every other). The API packages ({@code dev.coop}, {@code dev.coop.failure}, ...) are not checked: the internals use
 * the API's types, and the API's facades build the internals.
 *
 * <p>A dependency is an import (static or not) or a fully qualified name in code (comments and strings are not code).
 */
class PackageCyclesTest {
    private static final String INTERNAL = "dev.coop.internal";
    /** Comments, text blocks, strings and characters: what is not code (as {@link ImportsTest} reads it). */
    private static final Pattern NOT_CODE = Pattern.compile(
            "/\\*.*?\\*/|//[^\\n]*|\"\"\".*?\"\"\"|\"(?:\\\\.|[^\"\\\\\\n])*\"|'(?:\\\\.|[^'\\\\\\n])*'",
            Pattern.DOTALL);
    private static final Pattern PACKAGE = Pattern.compile("^package\\s+([\\w.]+)\\s*;", Pattern.MULTILINE);
    /** A name of an internal package followed by a type: what an import or a qualified name in code refers to. */
    private static final Pattern REFERENCE = Pattern.compile("\\b(dev\\.coop\\.internal(?:\\.[a-z]\\w*)*)\\.[A-Z]");

    @Test
    void the_internal_packages_have_no_import_cycle() throws IOException {
        Map<String, Map<String, Set<String>>> graph = graph(Path.of("src/main/java"));
        assertThat(graph.keySet()).as("internal packages read").contains(INTERNAL + ".step", INTERNAL + ".store");
        assertThat(cycles(graph)).as("import cycles among the internal packages (package -> package [by files])")
                .isEmpty();
    }

    @Test
    void a_cycle_is_found_and_named() {
        Map<String, Map<String, Set<String>>> graph = new TreeMap<>();
        edge(graph, "a", "b", "A.java");
        edge(graph, "b", "c", "B.java");
        edge(graph, "c", "a", "C.java");
        edge(graph, "c", "d", "C.java");
        edge(graph, "d", "e", "D.java");
        assertThat(cycles(graph))
                .containsExactly("a -> b [A.java] -> c [B.java] -> a [C.java] (in the cycle of [a, b, c])");
    }

    @Test
    void references_in_comments_and_strings_are_not_dependencies() {
        String code = NOT_CODE.matcher("""
                /** See {@link dev.coop.internal.step.Worker}. */
                class X { String s = "dev.coop.internal.read.Search"; dev.coop.internal.store.Tx tx; }
                """).replaceAll(" ");
        List<String> found = new ArrayList<>();
        for (Matcher m = REFERENCE.matcher(code); m.find();) {
            found.add(m.group(1));
        }
        assertThat(found).containsExactly("dev.coop.internal.store");
    }

    /** For each internal package, the internal packages it depends on, each with the files that do. */
    private static Map<String, Map<String, Set<String>>> graph(Path sources) throws IOException {
        Map<String, Map<String, Set<String>>> graph = new TreeMap<>();
        try (Stream<Path> files = Files.walk(sources)) {
            for (Path file : files.filter(f -> f.toString().endsWith(".java")).sorted().toList()) {
                String source = Files.readString(file);
                Matcher pkg = PACKAGE.matcher(source);
                if (!pkg.find() || !isInternal(pkg.group(1))) {
                    continue;
                }
                String from = pkg.group(1);
                graph.computeIfAbsent(from, k -> new TreeMap<>());
                Matcher ref = REFERENCE.matcher(NOT_CODE.matcher(source).replaceAll(" "));
                while (ref.find()) {
                    if (!ref.group(1).equals(from)) {
                        edge(graph, from, ref.group(1), file.getFileName().toString());
                    }
                }
            }
        }
        return graph;
    }

    private static boolean isInternal(String pkg) {
        return pkg.equals(INTERNAL) || pkg.startsWith(INTERNAL + ".");
    }

    private static void edge(Map<String, Map<String, Set<String>>> graph, String from, String to, String file) {
        graph.computeIfAbsent(from, k -> new TreeMap<>()).computeIfAbsent(to, k -> new TreeSet<>()).add(file);
        graph.computeIfAbsent(to, k -> new TreeMap<>());
    }

    /**
     * One cycle per strongly connected component of more than one package (Tarjan's algorithm), named by a shortest
     * cycle through its first package, each step with the files that make it.
     */
    private static List<String> cycles(Map<String, Map<String, Set<String>>> graph) {
        List<String> named = new ArrayList<>();
        for (Set<String> component : components(graph)) {
            if (component.size() > 1) {
                named.add(name(graph, component) + " (in the cycle of " + component + ")");
            }
        }
        return named;
    }

    private static List<Set<String>> components(Map<String, Map<String, Set<String>>> graph) {
        Map<String, Integer> index = new HashMap<>();
        Map<String, Integer> low = new HashMap<>();
        Deque<String> stack = new ArrayDeque<>();
        Set<String> onStack = new TreeSet<>();
        List<Set<String>> components = new ArrayList<>();
        for (String start : graph.keySet()) {
            if (!index.containsKey(start)) {
                connect(start, graph, index, low, stack, onStack, components);
            }
        }
        return components;
    }

    private static void connect(String v, Map<String, Map<String, Set<String>>> graph, Map<String, Integer> index,
            Map<String, Integer> low, Deque<String> stack, Set<String> onStack, List<Set<String>> components) {
        index.put(v, index.size());
        low.put(v, index.get(v));
        stack.push(v);
        onStack.add(v);
        for (String w : graph.get(v).keySet()) {
            if (!index.containsKey(w)) {
                connect(w, graph, index, low, stack, onStack, components);
                low.put(v, Math.min(low.get(v), low.get(w)));
            } else if (onStack.contains(w)) {
                low.put(v, Math.min(low.get(v), index.get(w)));
            }
        }
        if (low.get(v).equals(index.get(v))) {
            Set<String> component = new TreeSet<>();
            String w;
            do {
                w = stack.pop();
                onStack.remove(w);
                component.add(w);
            } while (!w.equals(v));
            components.add(component);
        }
    }

    /** A shortest cycle from the component's first package back to it (breadth first within the component). */
    private static String name(Map<String, Map<String, Set<String>>> graph, Set<String> component) {
        String start = component.iterator().next();
        Map<String, String> parent = new HashMap<>();
        Deque<String> queue = new ArrayDeque<>(List.of(start));
        String last = null;
        while (!queue.isEmpty() && last == null) {
            String v = queue.poll();
            for (String w : graph.get(v).keySet()) {
                if (w.equals(start)) {
                    last = v;
                    break;
                }
                if (component.contains(w) && !parent.containsKey(w)) {
                    parent.put(w, v);
                    queue.add(w);
                }
            }
        }
        List<String> path = new ArrayList<>();
        for (String v = last; v != null && !v.equals(start); v = parent.get(v)) {
            path.addFirst(v);
        }
        path.addFirst(start);
        path.add(start);
        StringBuilder text = new StringBuilder(start);
        for (int i = 1; i < path.size(); i++) {
            text.append(" -> ").append(path.get(i)).append(" ").append(graph.get(path.get(i - 1)).get(path.get(i)));
        }
        return text.toString();
    }
}
