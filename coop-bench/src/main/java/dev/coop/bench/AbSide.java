package dev.coop.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Path;
import java.util.Map;

/**
 * One side of a two-build A/B ({@code --ab-builds}): a JVM started by {@link AbBuilds} on the classes of one build,
 * against the server the driver started ({@code COOP_JDBC_URL}), measuring one round of one variant and writing the
 * result as JSON. Arguments are the driver's benchmark options; {@code -Dbench.abSide.out} names the file,
 * {@code -Dbench.abSide.counted=true} asks for the per-step counts too.
 */
public final class AbSide {
    static final String OUT = "bench.abSide.out";
    static final String COUNTED = "bench.abSide.counted";

    private AbSide() {
    }

    public static void main(String[] args) throws Exception {
        if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
            System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        }
        Options o = OptionParser.parse(args);
        Map<String, Object> result = new AbRound(o, true, true).measure(Boolean.getBoolean(COUNTED));
        new ObjectMapper().writeValue(Path.of(System.getProperty(OUT)).toFile(), result);
        System.exit(0); // the engines' pools are closed; leftover daemon threads of a peer must not keep it alive
    }
}
