package dev.coop.render;

/** The colours (ANSI, when the options have them) and the tree's glyphs (Unicode or ASCII) of the text renderer. */
final class TextStyle {
    private final boolean colors;
    private final Glyphs glyphs;

    TextStyle(RenderOptions options) {
        this.colors = options.colors();
        this.glyphs = options.unicode() ? Glyphs.UNICODE : Glyphs.ASCII;
    }

    Glyphs glyphs() {
        return glyphs;
    }

    String colorEvent(String type) {
        return switch (type) {
            case "COMMITTED" -> green(type);
            case "ROLLING_BACK", "ROLLED_BACK", "ROLLBACK_EMITTED" -> red(type);
            case "ROLLBACK_FAILED" -> ansi("1;31", type);
            case "CANCELLATION_REQUESTED", "ATTEMPT_FAILED", "RETRIED", "MARKED_DONE" -> yellow(type);
            case "PARKED" -> ansi("35", type);
            default -> type;
        };
    }

    String colorStatus(String status) {
        if (status.startsWith("COMMITTED")) {
            return green(status);
        }
        if (status.startsWith("ROLLBACK_FAILED")) {
            return ansi("1;31", status);
        }
        if (status.startsWith("ROLLED_BACK")) {
            return red(status);
        }
        if (status.startsWith("PARKED")) {
            return ansi("35", status);
        }
        return yellow(status);
    }

    String bold(String s) {
        return ansi("1", s);
    }

    String dim(String s) {
        return ansi("2", s);
    }

    String red(String s) {
        return ansi("31", s);
    }

    String green(String s) {
        return ansi("32", s);
    }

    String yellow(String s) {
        return ansi("33", s);
    }

    String ansi(String code, String s) {
        return colors ? "\u001b[" + code + "m" + s + "\u001b[0m" : s;
    }

    record Glyphs(String branch, String last, String pipe, String space, String ok, String fail,
            String undo, String handler, String bullet, String running, String parked) {
        static final Glyphs UNICODE = new Glyphs("├─ ", "└─ ", "│  ", "   ", "✓", "✗", "↺", "↪", "●", "▶", "‖");
        static final Glyphs ASCII = new Glyphs("|- ", "`- ", "|  ", "   ", "+", "x", "~", ">", "*", "=>", "||");
    }
}
