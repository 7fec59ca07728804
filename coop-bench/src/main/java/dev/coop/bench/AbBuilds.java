package dev.coop.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.coop.test.CoopPostgres;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The two builds of an A/B of code ({@code --ab-builds before,after}): each git ref is checked out once into
 * {@code target/ab-builds/<commit>} (a detached worktree of this repository) and its benchmark built there
 * ({@code mvn -pl coop-bench -am package}, nothing installed); each round then runs {@link AbSide} on that build's
 * classes in a JVM of its own, against the server this JVM started, alternating with the other build. Both refs must
 * contain {@link AbSide} (the harness itself).
 */
final class AbBuilds {
    /** One build: the ref as given, its commit, and the classpath of its benchmark. */
    record Build(String ref, String commit, String classpath) {
    }

    private AbBuilds() {
    }

    /** Checks out and builds {@code ref} (once per commit: a build directory that exists is reused). */
    static Build prepare(String ref) {
        Path root = Path.of(run(Path.of("."), "git", "rev-parse", "--show-toplevel").strip());
        String commit = run(root, "git", "rev-parse", "--verify", ref + "^{commit}").strip();
        Path dir = root.resolve("target/ab-builds").resolve(commit);
        if (!Files.isDirectory(dir)) {
            Bench.progress("ab: checking out " + ref + " (" + commit + ") into " + dir);
            run(root, "git", "worktree", "add", "--detach", dir.toString(), commit);
        }
        Path classes = dir.resolve("coop-bench/target/classes");
        if (!Files.isRegularFile(classes.resolve("dev/coop/bench/AbSide.class"))) {
            Bench.progress("ab: building " + ref + " in " + dir);
            run(dir, "mvn", "-B", "-q", "-pl", "coop-bench", "-am", "package", "-DskipTests",
                    "-Dmaven.javadoc.skip=true", "-Dmaven.source.skip=true");
        }
        if (!Files.isRegularFile(classes.resolve("dev/coop/bench/AbSide.class"))) {
            throw new IllegalArgumentException("--ab-builds: " + ref + " (" + commit + ") has no two-build A/B harness"
                    + " (dev.coop.bench.AbSide): both refs must contain it");
        }
        return new Build(ref, commit, classes + java.io.File.pathSeparator
                + dir.resolve("coop-bench/target/bench-lib") + java.io.File.separator + "*");
    }

    /** One round of one build: its measurements, as {@link AbRound#measure} returned them in the other JVM. */
    @SuppressWarnings("unchecked")
    static Map<String, Object> side(Build build, List<String> args, CoopPostgres server, boolean counted) {
        try {
            Path out = Files.createTempFile("coop-ab-", ".json");
            List<String> command = new ArrayList<>();
            command.add(ProcessHandle.current().info().command().orElse("java"));
            command.addAll(List.of(System.getenv().getOrDefault("BENCH_JVM", "-Xms1g -Xmx1g -XX:+UseG1GC")
                    .strip().split("\\s+")));
            command.add("-D" + AbSide.OUT + "=" + out);
            command.add("-D" + AbSide.COUNTED + "=" + counted);
            command.addAll(List.of("-classpath", build.classpath(), AbSide.class.getName()));
            command.addAll(args);
            ProcessBuilder pb = new ProcessBuilder(command).inheritIO();
            pb.environment().put(CoopPostgres.URL_VARIABLE, server.jdbcUrl("postgres"));
            pb.environment().put(CoopPostgres.USER_VARIABLE, server.user());
            pb.environment().put(CoopPostgres.PASSWORD_VARIABLE, server.password());
            int status = pb.start().waitFor();
            if (status != 0) {
                throw new IllegalStateException("ab: the run of " + build.ref() + " exited with " + status);
            }
            Map<String, Object> result = new ObjectMapper().readValue(out.toFile(), Map.class);
            Files.deleteIfExists(out);
            return result;
        } catch (IOException e) {
            throw new IllegalStateException("ab: could not run " + build.ref() + ": " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("ab: interrupted", e);
        }
    }

    /** The options a side gets: the driver's, without what chooses the workload and the builds. */
    static List<String> sideArgs(List<String> raw) {
        List<String> args = new ArrayList<>();
        for (int i = 0; i < raw.size(); i++) {
            String a = raw.get(i);
            String key = a.contains("=") ? a.substring(0, a.indexOf('=')) : a;
            if (List.of("--workloads", "--ab-builds", "--ab-rounds", "--runs", "--warmups").contains(key)) {
                i += a.contains("=") ? 0 : 1;
                continue;
            }
            args.add(a);
        }
        return args;
    }

    private static String run(Path dir, String... command) {
        try {
            Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
            String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (p.waitFor() != 0) {
                throw new IllegalStateException(String.join(" ", command) + " failed in " + dir + ":\n" + output);
            }
            return output;
        } catch (IOException e) {
            throw new IllegalStateException(String.join(" ", command) + ": " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted: " + String.join(" ", command), e);
        }
    }
}
