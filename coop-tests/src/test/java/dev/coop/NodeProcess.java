package dev.coop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.test.Await;
import dev.coop.test.CoopDatabase;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;

/**
 * Runs scripts of the Node.js participant ({@code participants/node}) against a test's database, for the tests of a
 * participant in another language. They run when {@code node} (18 or later) and the participant's
 * {@code node_modules} are installed ({@code .ci/run} installs both). Elsewhere they are skipped, saying how to
 * install what is missing; on CI (the environment variable {@code CI} set) they fail instead, so that a broken
 * install never passes as green.
 */
final class NodeProcess {
    static final Path FOLDER = participantFolder();
    static final Duration WAIT = Duration.ofSeconds(30);

    /** Why the participant cannot run here, or null. */
    static final String MISSING = missing();

    private NodeProcess() {
    }

    /** Skips the calling test when the participant cannot run here; fails it instead on CI. */
    static void assumeInstalled() {
        if (MISSING != null && System.getenv("CI") != null) {
            Assertions.fail(MISSING.replace(" skipped:", " cannot run on CI:"));
        }
        Assumptions.assumeTrue(MISSING == null, MISSING);
    }

    /** {@code node <arguments>} in the participant's folder, connected to {@code db} by libpq's variables. */
    static ProcessBuilder builder(CoopDatabase db, String... arguments) {
        List<String> command = new java.util.ArrayList<>(List.of("node"));
        command.addAll(List.of(arguments));
        ProcessBuilder builder = new ProcessBuilder(command).directory(FOLDER.toFile()).redirectErrorStream(true);
        URI url = URI.create(db.jdbcUrl().substring("jdbc:".length()));
        Map<String, String> env = builder.environment();
        env.put("PGHOST", url.getHost());
        env.put("PGPORT", String.valueOf(url.getPort() < 0 ? 5432 : url.getPort()));
        env.put("PGDATABASE", url.getPath().substring(1));
        env.put("PGUSER", db.server().user());
        env.put("PGPASSWORD", db.server().password() == null ? "" : db.server().password());
        return builder;
    }

    /** Starts a participant script that prints {@code ready} once it listens; its output lines go to {@code output}. */
    static Process start(CoopDatabase db, String script, List<String> output) throws IOException {
        return start(db, output, script);
    }

    /** {@link #start(CoopDatabase, String, List)} with any arguments of {@code node} ({@code -e <script>}). */
    static Process start(CoopDatabase db, List<String> output, String... arguments) throws IOException {
        String script = arguments.length == 1 ? arguments[0] : "(an inline script)";
        Process process = builder(db, arguments).start();
        Thread reader = new Thread(() -> {
            try (BufferedReader out = new BufferedReader(
                    new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line = out.readLine(); line != null; line = out.readLine()) {
                    output.add(line);
                }
            } catch (IOException e) {
                output.add("(output unreadable: " + e + ")");
            }
        }, "node-participant-output");
        reader.setDaemon(true);
        reader.start();
        Await.until("the Node participant " + script + " is ready (output: " + output + ")", WAIT,
                () -> output.contains("ready") || !process.isAlive());
        assertThat(process.isAlive()).as("the Node participant runs; its output: %s", output).isTrue();
        return process;
    }

    /** A new list for a participant's output lines, safe to read while it runs. */
    static List<String> output() {
        return new CopyOnWriteArrayList<>();
    }

    /** Stops a participant started by {@link #start}: SIGTERM, then, if it does not exit, a kill. */
    static void stop(Process process) throws InterruptedException {
        if (process != null) {
            process.destroy(); // SIGTERM: the participant stops claiming and exits
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    /** Runs a script to its end: its exit code and its output (both streams). */
    record Ran(int exitCode, String output) {
    }

    static Ran run(CoopDatabase db, String... arguments) throws IOException, InterruptedException {
        Process p = builder(db, arguments).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).as("node ended; its output: %s", out).isTrue();
        return new Ran(p.exitValue(), out);
    }

    private static String missing() {
        if (FOLDER == null || !Files.isDirectory(FOLDER.resolve("node_modules/pg"))) {
            return "Node participant tests skipped: participants/node/node_modules is missing. Install it with"
                    + " 'cd participants/node && npm ci' (Node.js 18 or later)";
        }
        String version = nodeVersion();
        if (version == null || !version.matches("v(1[89]|[2-9][0-9])\\..*")) {
            return "Node participant tests skipped: " + (version == null ? "no 'node' on the PATH" : "node " + version)
                    + ". Install Node.js 18 or later ('sudo apt-get install -y nodejs npm' on Debian/Ubuntu)";
        }
        return null;
    }

    private static String nodeVersion() {
        try {
            Process p = new ProcessBuilder("node", "--version").redirectErrorStream(true).start();
            String version = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            return p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0 ? version : null;
        } catch (IOException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    /** participants/node of this checkout, looked for from the working directory up; null when absent. */
    private static Path participantFolder() {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path candidate = dir.resolve("participants/node");
            if (Files.isRegularFile(candidate.resolve("coop.js"))) {
                return candidate;
            }
        }
        return null;
    }
}
