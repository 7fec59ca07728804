package dev.coop.dashboard.internal;

import dev.coop.render.TerminalText;
import dev.coop.internal.store.InputLimits;

/**
 * What an operator's reason may be: required, at most {@value InputLimits#MAX_REASON_LENGTH} characters, one or more
 * lines of text without other control characters (they would garble the audit, logs and terminals). A refused reason is
 * still audited, escaped and cut.
 */
final class Reasons {
    private Reasons() {
    }

    /** Why the reason is refused, or null when it is fit. */
    static String unfit(String reason) {
        if (reason == null) {
            return "A reason is required: it is recorded with your name in the audit";
        }
        if (reason.length() > InputLimits.MAX_REASON_LENGTH) {
            return "A reason is at most " + InputLimits.MAX_REASON_LENGTH + " characters, this one has "
                    + reason.length();
        }
        for (int i = 0; i < reason.length(); i++) {
            char c = reason.charAt(i);
            if (Character.isISOControl(c) && c != '\n' && c != '\t') {
                return "A reason cannot contain control characters (found U+" + String.format("%04X", (int) c)
                        + " at index " + i + ")";
            }
        }
        if (InputLimits.loneSurrogateAt(reason) >= 0) {
            return "A reason cannot contain an unpaired UTF-16 surrogate";
        }
        return null;
    }

    /** The reason as a refusal's audit entry keeps it: control characters escaped, cut to the longest reason. */
    static String forAudit(String text) {
        String safe = TerminalText.escape(text);
        StringBuilder b = new StringBuilder(safe.length());
        safe.codePoints().filter(cp -> !Character.isSurrogate((char) cp) || cp > 0xFFFF).forEach(b::appendCodePoint);
        String kept = b.toString();
        return kept.length() > InputLimits.MAX_REASON_LENGTH
                ? kept.substring(0, InputLimits.MAX_REASON_LENGTH - 3) + "..."
                : kept;
    }
}
