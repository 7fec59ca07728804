package dev.coop.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The {@code coop} launcher script finds a JDK 21 or later by itself, passing older ones over. */
class LauncherScriptTest {
    static final Path SCRIPT = Path.of("bin", "coop");

    @TempDir
    Path dir;

    @Test
    void the_launcher_passes_over_an_older_java_and_takes_a_jdk_21_from_the_toolchains() throws Exception {
        assumeTrue(Files.isExecutable(Path.of("/bin/sh")), "a POSIX shell");
        Path old = Files.createDirectories(dir.resolve("jdk17/bin"));
        Path oldJava = old.resolve("java");
        Files.writeString(oldJava, "#!/bin/sh\necho 'openjdk version \"17.0.2\" 2022-01-18' >&2\n");
        oldJava.toFile().setExecutable(true);
        Path home = Files.createDirectories(dir.resolve("home/.m2"));
        String jdk = Path.of(System.getProperty("java.home")).toString();
        Files.writeString(home.resolve("toolchains.xml"), "<toolchains><toolchain><configuration>\n<jdkHome>" + jdk
                + "</jdkHome>\n</configuration></toolchain></toolchains>\n");

        String chosen = run(Map.of("JAVA_HOME", dir.resolve("jdk17").toString(), "PATH", old + ":/usr/bin:/bin",
                "HOME", dir.resolve("home").toString(), "COOP_PRINT_JAVA", "1"));

        assertThat(chosen.strip()).isEqualTo(jdk + "/bin/java");
    }

    private static String run(Map<String, String> env) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder("/bin/sh", SCRIPT.toString()).redirectErrorStream(true);
        pb.environment().clear();
        pb.environment().putAll(env);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(out).isZero();
        return out;
    }
}
