package dev.coop.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.DataInputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The jars' main class loads in any java and says plainly when that java is older than Java 21. */
class LauncherTest {
    static final Path CLASSES = Path.of("target", "classes");

    @Test
    void the_launcher_class_is_compiled_for_java_8_so_that_an_old_java_can_load_it() throws Exception {
        try (InputStream in = Files.newInputStream(CLASSES.resolve("dev/coop/cli/Launcher.class"));
                DataInputStream data = new DataInputStream(in)) {
            assertThat(data.readInt()).isEqualTo(0xCAFEBABE);
            data.readUnsignedShort(); // minor version
            assertThat(data.readUnsignedShort()).as("class file major version").isEqualTo(52);
        }
    }

    @Test
    void a_java_older_than_21_is_told_what_it_lacks_and_where_to_find_one() throws Exception {
        Path java17 = Path.of("/usr/lib/jvm/java-17-openjdk-amd64/bin/java");
        assumeTrue(Files.isExecutable(java17), "a Java 17 to run the launcher with");
        Process p = new ProcessBuilder(java17.toString(), "-cp", CLASSES.toString(), "dev.coop.cli.Launcher", "--help")
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(out).isEqualTo(2);
        assertThat(out).contains("coop needs Java 21 or later, but this java is Java 17").contains("bin/coop")
                .doesNotContain("UnsupportedClassVersionError");
    }

    @Test
    void a_java_of_21_or_later_runs_the_command() throws Exception {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Process p = new ProcessBuilder(java.toString(), "-cp", System.getProperty("java.class.path"),
                "dev.coop.cli.Launcher", "--help").redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(out).contains("Usage: coop");
    }

    @Test
    void feature_releases_are_read_from_old_and_new_version_strings() {
        assertThat(Launcher.feature("1.8")).isEqualTo(8);
        assertThat(Launcher.feature("17")).isEqualTo(17);
        assertThat(Launcher.feature("21")).isEqualTo(21);
        assertThat(Launcher.feature("25-ea")).isEqualTo(25);
        assertThat(Launcher.feature("")).isZero();
    }
}
