package dev.coop.internal;

/**
 * Text that came from a request or a user (a login name, a reason, a topic, an exception's message), made safe to
 * write into a log line: control characters are escaped ({@code \n}, {@code \r}, {@code \t}, {@code \u001b}, ...)
 * so that no value can end a log line and forge the next one, nor send terminal escapes to whoever reads the log.
 */
public final class LogText {
    /** The longest value written to a log line; longer values are cut and say so. */
    static final int MAX = 2_000;

    private LogText() {
    }

    /** {@code text} with control characters escaped and cut at {@value #MAX} characters; "null" for null. */
    public static String of(Object value) {
        if (value == null) {
            return "null";
        }
        String s = value.toString();
        StringBuilder b = null;
        int end = Math.min(s.length(), MAX);
        for (int i = 0; i < end; i++) {
            char c = s.charAt(i);
            if (needsEscape(c)) {
                if (b == null) {
                    b = new StringBuilder(end + 16).append(s, 0, i);
                }
                b.append(escape(c));
            } else if (b != null) {
                b.append(c);
            }
        }
        String safe = b == null ? s.substring(0, end) : b.toString();
        return s.length() > MAX ? safe + "...(" + s.length() + " characters)" : safe;
    }

    private static boolean needsEscape(char c) {
        return Character.isISOControl(c) || c == '\u2028' || c == '\u2029';
    }

    private static String escape(char c) {
        return switch (c) {
            case '\n' -> "\\n";
            case '\r' -> "\\r";
            case '\t' -> "\\t";
            default -> String.format("\\u%04x", (int) c);
        };
    }
}
