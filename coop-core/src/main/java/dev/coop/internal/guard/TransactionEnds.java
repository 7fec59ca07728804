package dev.coop.internal.guard;

import java.util.Locale;

/**
 * Finds, in SQL text a step sends, a statement that would end or split the step's transaction: {@code COMMIT},
 * {@code END}, {@code ABORT}, {@code ROLLBACK} (but not {@code ROLLBACK TO [SAVEPOINT]}), {@code PREPARE TRANSACTION},
 * with any of their options ({@code AND CHAIN}, {@code WORK}, {@code PREPARED}), in any case. A statement starts at
 * the beginning of the text and after every {@code ;} outside string literals ({@code '...'}, {@code E'...'}),
 * quoted identifiers, dollar quotes ({@code $tag$...$tag$}) and comments ({@code --} and nested
 * {@code /* *}{@code /}); inside the {@code BEGIN ATOMIC ... END} body of a {@code CREATE FUNCTION} the closing
 * {@code END} is allowed. Comments and whitespace before a statement's first word are skipped.
 *
 * <p>The text is read twice: with {@code standard_conforming_strings} on (a backslash is an ordinary character in
 * {@code '...'}) and off (it escapes the next one), and refused if either reading finds such a statement, so that the
 * server's setting cannot hide one.
 */
final class TransactionEnds {
    private TransactionEnds() {
    }

    /** The words that begin the refused statement (for the error), or null when the text ends no transaction. */
    static String find(String sql) {
        if (sql == null) {
            return null;
        }
        String found = new Reader(sql, true).find();
        return found != null ? found : new Reader(sql, false).find();
    }

    /** One reading of the text. */
    private static final class Reader {
        private final String s;
        private final boolean standardStrings;
        private int i;
        /** Words of the current statement so far, whether it is a CREATE, and its latest word. */
        private int words;
        private boolean create;
        private String previous = "";
        private int parenDepth;
        private int beginDepth;

        Reader(String sql, boolean standardStrings) {
            this.s = sql;
            this.standardStrings = standardStrings;
        }

        String find() {
            boolean atStart = true;
            while (i < s.length()) {
                char ch = s.charAt(i);
                if (Character.isWhitespace(ch)) {
                    i++;
                } else if (ch == '-' && next('-')) {
                    skipLineComment();
                } else if (ch == '/' && next('*')) {
                    skipBlockComment();
                } else if (ch == ';') {
                    i++;
                    atStart |= statementEnds();
                } else if (isWordStart(ch)) {
                    int start = i;
                    if ((ch == 'e' || ch == 'E') && next('\'')) { // E'...': backslash escapes
                        i++;
                        skipQuoted('\'', true);
                        atStart = false;
                        continue;
                    }
                    String word = word();
                    if (atStart) {
                        String refused = beginDepth > 0 && word.equalsIgnoreCase("end") ? null : refused(word, start);
                        if (refused != null) {
                            return refused;
                        }
                        atStart = false;
                    }
                    track(word);
                } else {
                    atStart = false;
                    other(ch);
                }
            }
            return null;
        }

        /**
         * A semicolon outside parentheses ends a statement: the next word starts one, also inside a routine's body
         * (its END is allowed).
         */
        private boolean statementEnds() {
            if (parenDepth != 0) {
                return false;
            }
            if (beginDepth == 0) {
                words = 0;
            }
            return true;
        }

        private void other(char ch) {
            switch (ch) {
                case '\'' -> skipQuoted('\'', !standardStrings);
                case '"' -> skipQuoted('"', false);
                case '$' -> skipDollar();
                case '(' -> {
                    parenDepth++;
                    i++;
                }
                case ')' -> {
                    parenDepth = Math.max(0, parenDepth - 1);
                    i++;
                }
                default -> i++;
            }
        }

        /** The refused statement beginning with {@code first} at {@code start}, or null. */
        private String refused(String first, int start) {
            String w = first.toUpperCase(Locale.ROOT);
            switch (w) {
                case "COMMIT", "END", "ABORT" -> {
                    return phrase(start);
                }
                case "ROLLBACK" -> {
                    String second = peekWord(0);
                    int skip = second != null && (second.equals("WORK") || second.equals("TRANSACTION")) ? 1 : 0;
                    String then = peekWord(skip);
                    return "TO".equals(then) ? null : phrase(start); // ROLLBACK TO SAVEPOINT stays in the transaction
                }
                case "PREPARE" -> {
                    return "TRANSACTION".equals(peekWord(0)) ? phrase(start) : null;
                }
                default -> {
                    return null;
                }
            }
        }

        /** Up to three words from {@code start}, upper case, for the error message. */
        private String phrase(int start) {
            int end = start;
            int n = 0;
            while (end < s.length() && n < 3) {
                while (end < s.length() && isWordPart(s.charAt(end))) {
                    end++;
                }
                n++;
                int after = end;
                while (after < s.length() && (s.charAt(after) == ' ' || s.charAt(after) == '\t')) {
                    after++;
                }
                if (after >= s.length() || !isWordStart(s.charAt(after))) {
                    break;
                }
                end = after;
            }
            return s.substring(start, end).replaceAll("\\s+", " ").toUpperCase(Locale.ROOT);
        }

        /** The {@code skip + 1}-th word after the current position (comments and whitespace between), upper case. */
        private String peekWord(int skip) {
            int saved = i;
            try {
                for (int k = 0;; k++) {
                    skipSpaceAndComments();
                    if (i >= s.length() || !isWordStart(s.charAt(i))) {
                        return null;
                    }
                    String w = word().toUpperCase(Locale.ROOT);
                    if (k == skip) {
                        return w;
                    }
                }
            } finally {
                i = saved;
            }
        }

        private void skipSpaceAndComments() {
            while (i < s.length()) {
                char ch = s.charAt(i);
                if (Character.isWhitespace(ch)) {
                    i++;
                } else if (ch == '-' && next('-')) {
                    skipLineComment();
                } else if (ch == '/' && next('*')) {
                    skipBlockComment();
                } else {
                    return;
                }
            }
        }

        /**
         * The body of an SQL-standard routine ({@code CREATE ... BEGIN ATOMIC ...; ...; END}, as the driver reads it):
         * its {@code ;} do not end the CREATE, and its CASE ... END and final END nest.
         */
        private void track(String word) {
            if (words++ == 0) {
                create = word.equalsIgnoreCase("create");
            } else if (create && parenDepth == 0) {
                if (word.equalsIgnoreCase("atomic") && previous.equalsIgnoreCase("begin")) {
                    beginDepth++;
                } else if (beginDepth > 0 && word.equalsIgnoreCase("case")) {
                    beginDepth++;
                } else if (beginDepth > 0 && word.equalsIgnoreCase("end")) {
                    beginDepth--;
                }
            }
            previous = word;
        }

        private boolean next(char expected) {
            return i + 1 < s.length() && s.charAt(i + 1) == expected;
        }

        private String word() {
            int start = i;
            while (i < s.length() && isWordPart(s.charAt(i))) {
                i++;
            }
            return s.substring(start, i);
        }

        private void skipLineComment() {
            while (i < s.length() && s.charAt(i) != '\n' && s.charAt(i) != '\r') {
                i++;
            }
        }

        private void skipBlockComment() { // they nest in PostgreSQL
            int depth = 0;
            while (i < s.length()) {
                if (s.startsWith("/*", i)) {
                    depth++;
                    i += 2;
                } else if (s.startsWith("*/", i)) {
                    depth--;
                    i += 2;
                    if (depth == 0) {
                        return;
                    }
                } else {
                    i++;
                }
            }
        }

        /** From the opening quote at {@code i} to after the closing one; a doubled quote stands for itself. */
        private void skipQuoted(char quote, boolean backslashEscapes) {
            i++;
            while (i < s.length()) {
                char ch = s.charAt(i);
                if (backslashEscapes && ch == '\\') {
                    i += 2;
                } else if (ch == quote) {
                    if (next(quote)) {
                        i += 2;
                    } else {
                        i++;
                        return;
                    }
                } else {
                    i++;
                }
            }
        }

        /** {@code $tag$ ... $tag$} (tag possibly empty); a {@code $} that opens none ({@code $1}) is one character. */
        private void skipDollar() {
            int end = i + 1;
            while (end < s.length() && s.charAt(end) != '$' && isTagPart(s.charAt(end), end == i + 1)) {
                end++;
            }
            if (end >= s.length() || s.charAt(end) != '$') {
                i++;
                return;
            }
            String tag = s.substring(i, end + 1);
            int close = s.indexOf(tag, end + 1);
            i = close < 0 ? s.length() : close + tag.length();
        }

        private static boolean isTagPart(char ch, boolean first) {
            return Character.isLetter(ch) || ch == '_' || ch >= 0x80 || (!first && Character.isDigit(ch));
        }

        private static boolean isWordStart(char ch) {
            return Character.isLetter(ch) || ch == '_' || ch >= 0x80;
        }

        private static boolean isWordPart(char ch) {
            return isWordStart(ch) || Character.isDigit(ch) || ch == '$';
        }
    }
}
