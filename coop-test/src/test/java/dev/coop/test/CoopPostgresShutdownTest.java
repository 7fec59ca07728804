package dev.coop.test;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.DisabledOnOs;
import org.junit.jupiter.api.condition.OS;

/**
 * SIGTERM of a program with engines on an embedded server ({@link ShutdownProbe}): the engines are closed
 * ({@link CoopPostgres#beforeStopping}) while the server still runs, so nothing warns of a lost database.
 */
class CoopPostgresShutdownTest {
    @Test
    @DisabledOnOs(OS.WINDOWS) // kill -TERM
    void sigterm_closes_the_engines_before_the_embedded_server_stops() throws Exception {
        Process probe = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-cp",
                System.getProperty("java.class.path"), ShutdownProbe.class.getName()).redirectErrorStream(true)
                .start();
        List<String> lines = new ArrayList<>();
        try (BufferedReader out = new BufferedReader(new InputStreamReader(probe.getInputStream(),
                StandardCharsets.UTF_8))) {
            String line;
            while ((line = out.readLine()) != null) { // until it is ready, then SIGTERM; the rest until it exits
                lines.add(line);
                if (line.equals("ready")) { // kill -TERM (Process.destroy would close the output being read)
                    assertThat(new ProcessBuilder("kill", "-TERM", Long.toString(probe.pid())).start().waitFor())
                            .isZero();
                }
            }
        } finally {
            if (!probe.waitFor(120, TimeUnit.SECONDS)) {
                probe.destroyForcibly();
            }
        }
        String all = String.join("\n", lines);
        assertThat(lines).as(all).contains("ready", "engine closed; database still up: 1");
        assertThat(lines).as(all).noneMatch(l -> l.contains("WARN") || l.contains("ERROR") || l.contains("FATAL"));
    }
}
