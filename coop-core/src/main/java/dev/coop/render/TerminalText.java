package dev.coop.render;

import java.util.regex.Pattern;

/**
 * Makes text safe to print on a terminal. Failure messages, names and reasons are user input: an ESC, OSC or BEL
 * sequence in them could clear the screen, retitle the terminal or forge a link. Every C0 and C1 control character
 * (except the line feed), DEL, and the Unicode bidirectional overrides are shown as {@code \u001B}-style escapes;
 * only the colour sequences a renderer wrote itself survive, and only when colours are on.
 */
public final class TerminalText {
    /** The SGR sequences {@link TextRenderer} emits: reset, bold, dim, red, green, yellow, magenta, bold red. */
    private static final Pattern OWN_COLOUR = Pattern.compile("\\[(?:0|1|2|31|32|33|35|1;31)m");

    private TerminalText() {
    }

    /** {@code text} with every control character escaped, line feeds included. */
    public static String escape(String text) {
        return escape(text, false, false);
    }

    /** {@code text} with control characters escaped except line feeds and tabs (for multi-line messages). */
    public static String escapeKeepingLines(String text) {
        return escape(text, true, false);
    }

    /**
     * {@code text} with control characters escaped; line feeds and tabs kept when {@code keepLines}, and the renderer's
     * own colour sequences kept when {@code keepColours}.
     */
    static String escape(String text, boolean keepLines, boolean keepColours) {
        if (text == null) {
            return null;
        }
        StringBuilder out = null;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            boolean unsafe = isUnsafe(c) && !(keepLines && (c == '\n' || c == '\t'));
            if (unsafe && keepColours && c == '\u001b') {
                var m = OWN_COLOUR.matcher(text).region(i + 1, text.length());
                if (m.lookingAt()) {
                    unsafe = false;
                }
            }
            if (unsafe && out == null) {
                out = new StringBuilder(text.length() + 16).append(text, 0, i);
            }
            if (out != null) {
                if (unsafe) {
                    out.append(String.format("\\u%04X", (int) c));
                } else {
                    out.append(c);
                }
            }
        }
        return out == null ? text : out.toString();
    }

    private static boolean isUnsafe(char c) {
        return c < 0x20 || c == 0x7f || (c >= 0x80 && c <= 0x9f) || (c >= '\u202a' && c <= '\u202e')
                || (c >= '\u2066' && c <= '\u2069');
    }
}
