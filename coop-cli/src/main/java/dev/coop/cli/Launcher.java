package dev.coop.cli;

import java.lang.reflect.InvocationTargetException;

/**
 * The jars' main class: compiled for Java 8 so that any {@code java} can load it, it says plainly when that
 * {@code java} is older than the Java 21 the command needs (instead of an {@code UnsupportedClassVersionError}), and
 * otherwise runs {@link CoopCli}.
 */
public final class Launcher {
    static final int REQUIRED = 21;

    private Launcher() {
    }

    public static void main(String[] args) throws Throwable {
        int feature = feature(System.getProperty("java.specification.version", "0"));
        if (feature < REQUIRED) {
            System.err.println("coop needs Java " + REQUIRED + " or later, but this java is Java "
                    + System.getProperty("java.specification.version") + " (" + System.getProperty("java.home")
                    + "). Run coop-cli/bin/coop, which finds a JDK " + REQUIRED + "+ as the build does, or run this"
                    + " jar with a newer java (set JAVA_HOME).");
            System.exit(2);
        }
        try {
            Class.forName("dev.coop.cli.CoopCli").getMethod("main", String[].class).invoke(null, (Object) args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    /** The feature release of a {@code java.specification.version} ("1.8" is 8, "17" is 17); 0 when unreadable. */
    static int feature(String specification) {
        String s = specification.startsWith("1.") ? specification.substring(2) : specification;
        int end = 0;
        while (end < s.length() && Character.isDigit(s.charAt(end))) {
            end++;
        }
        return end == 0 ? 0 : Integer.parseInt(s.substring(0, end));
    }
}
