package dev.coop.render;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Replaces what differs between two runs of the same scenario with stable placeholders, so rendered trees and logs
 * can be compared with golden files: UUIDs become {@code <id1>}, {@code <id2>}, ... (numbered by first appearance,
 * so equal ids stay equal), engine ids {@code name-1a2b3c4d} become {@code name-<e1>}, ..., timestamps
 * {@code <time>} and durations {@code <dur>} (also the numbers of JSON {@code "durationMs"} fields).
 */
public final class Masking {
    private static final Pattern UUID = Pattern
            .compile("\\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\\b");
    private static final Pattern ENGINE = Pattern
            .compile("\\b([A-Za-z0-9][A-Za-z0-9._-]*)-[0-9a-f]{8}(?![0-9A-Za-z-])");
    private static final Pattern TIME = Pattern.compile(
            "\\d{4}-\\d{2}-\\d{2}[T ]\\d{2}:\\d{2}(?::\\d{2}(?:\\.\\d{1,9})?)?(?:Z|[+-]\\d{2}(?::?\\d{2})?| UTC)?");
    private static final Pattern DURATION = Pattern
            .compile("\\b\\d+ h \\d{2} m\\b|\\b\\d+ m \\d{2} s\\b|\\b\\d+(?:\\.\\d+)? (?:ms|s)\\b");
    private static final Pattern JSON_DURATION = Pattern.compile("(\"durationMs\"\\s*:\\s*)(\\d+)");

    private Masking() {
    }

    /** The text with ids, engine ids, timestamps and durations replaced. */
    public static String mask(String text) {
        String s = numbered(text, UUID, (m, n) -> "<id" + n + ">", m -> m.group().toLowerCase(Locale.ROOT));
        s = numbered(s, ENGINE, (m, n) -> m.group(1) + "-<e" + n + ">", Matcher::group);
        s = TIME.matcher(s).replaceAll("<time>");
        s = JSON_DURATION.matcher(s).replaceAll("$1\"<dur>\"");
        return DURATION.matcher(s).replaceAll("<dur>");
    }

    private static String numbered(String text, Pattern pattern, BiFunction<Matcher, Integer, String> replacement,
            Function<Matcher, String> key) {
        Map<String, Integer> seen = new LinkedHashMap<>();
        Matcher m = pattern.matcher(text);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            int n = seen.computeIfAbsent(key.apply(m), k -> seen.size() + 1);
            m.appendReplacement(out, Matcher.quoteReplacement(replacement.apply(m, n)));
        }
        m.appendTail(out);
        return out.toString();
    }
}
