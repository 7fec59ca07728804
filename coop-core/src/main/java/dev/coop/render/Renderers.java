package dev.coop.render;

import java.io.Console;
import java.lang.reflect.Method;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;

/** Ready-made renderers. */
public final class Renderers {
    private Renderers() {
    }

    /**
     * A text renderer for standard output: colours when it is a terminal (that is not {@code TERM=dumb}) and
     * {@code NO_COLOR} is unset, Unicode when standard output encodes UTF-8, ASCII otherwise.
     */
    public static TextRenderer forTerminal() {
        return new TextRenderer(terminalOptions());
    }

    /** The options {@link #forTerminal()} uses, decided from this process's console and environment. */
    public static RenderOptions terminalOptions() {
        return terminalOptions(isTerminal(System.console()), System.getenv("TERM"), System.getenv("NO_COLOR"),
                stdoutCharset());
    }

    /**
     * The options for an output with these properties: colours only on a terminal that is not dumb and when
     * {@code noColor} is null or empty (see no-color.org); Unicode only for a UTF charset.
     */
    public static RenderOptions terminalOptions(boolean terminal, String term, String noColor, Charset charset) {
        boolean colors = terminal && !"dumb".equals(term) && (noColor == null || noColor.isEmpty());
        boolean unicode = charset != null && charset.name().toUpperCase(java.util.Locale.ROOT).startsWith("UTF");
        return RenderOptions.defaults().withColors(colors).withUnicode(unicode);
    }

    /** A plain text renderer: Unicode, no colours, no frames. */
    public static TextRenderer text() {
        return new TextRenderer(RenderOptions.defaults());
    }

    /** An indented JSON renderer. */
    public static JsonRenderer json() {
        return new JsonRenderer(true);
    }

    /**
     * Whether the console is an interactive terminal. Up to JDK 21 {@link System#console()} is null unless it is;
     * from JDK 22 on it is not null when output is redirected either, and {@code Console.isTerminal()} tells.
     */
    static boolean isTerminal(Console console) {
        if (console == null) {
            return false;
        }
        try {
            Method isTerminal = Console.class.getMethod("isTerminal");
            return (Boolean) isTerminal.invoke(console);
        } catch (NoSuchMethodException e) {
            return true;
        } catch (ReflectiveOperationException | RuntimeException e) {
            return false;
        }
    }

    private static Charset stdoutCharset() {
        String name = System.getProperty("stdout.encoding");
        try {
            return name == null ? Charset.defaultCharset() : Charset.forName(name);
        } catch (RuntimeException e) {
            return StandardCharsets.US_ASCII;
        }
    }
}
