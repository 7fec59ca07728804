package dev.coop.test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The servers of a {@link CoopCitus} cluster as processes: three PostgreSQL 15 nodes on free ports of 127.0.0.1, each
 * with a data directory of its own in a temporary directory, made with {@code initdb} and started and stopped with
 * {@code pg_ctl} from the binaries of one directory. When the JVM runs as root, the servers run as the
 * {@code postgres} user (PostgreSQL refuses root), by {@code runuser}. {@link #start(Path)} registers a shutdown hook
 * that stops the nodes and deletes their data.
 */
final class CitusNodes {
    private static final int NODES = 3;

    private final Path bin;
    private final Path data;
    private final List<Integer> ports;
    private final boolean asPostgres;

    private CitusNodes(Path bin, Path data, List<Integer> ports, boolean asPostgres) {
        this.bin = bin;
        this.data = data;
        this.ports = List.copyOf(ports);
        this.asPostgres = asPostgres;
    }

    /**
     * Initializes and starts the nodes, with the binaries of {@code bin}; they are stopped and deleted at JVM exit.
     *
     * @throws IllegalStateException if a node could not be made or started
     */
    static CitusNodes start(Path bin) {
        boolean root = "root".equals(System.getProperty("user.name"));
        Path data;
        try {
            data = Files.createTempDirectory("coop-citus-");
        } catch (IOException e) {
            throw new UncheckedIOException("Could not create a directory for the Citus cluster", e);
        }
        if (root) {
            run(List.of("chown", "postgres:postgres", data.toString()), false);
        }
        CitusNodes nodes = new CitusNodes(bin, data, freePorts(), root);
        Runtime.getRuntime().addShutdownHook(new Thread(nodes::destroy, "coop-citus-shutdown"));
        for (int port : nodes.ports) {
            nodes.init(port);
        }
        return nodes;
    }

    /** The ports of the nodes, the coordinator's first. */
    List<Integer> ports() {
        return ports;
    }

    /** The directory that holds the nodes' data directories and logs. */
    Path data() {
        return data;
    }

    private void init(int port) {
        Path dir = data.resolve("node-" + port);
        pg(List.of("initdb", "-D", dir.toString(), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                "--locale=C.UTF-8", "--no-sync"));
        String conf = String.join("\n", "listen_addresses = '127.0.0.1'", "port = " + port,
                "unix_socket_directories = ''", "shared_preload_libraries = 'citus'", "max_connections = 300",
                "max_prepared_transactions = 300", "shared_buffers = 64MB", "fsync = off",
                // on: a commit's WAL is written (to the operating system; fsync is off) before it returns, so a
                // node stopped as a crash would (stopNode) keeps every commit it acknowledged; off lost the last
                // ones (up to 3 x wal_writer_delay), and a fault test then missed rows it had seen committed
                "synchronous_commit = on", "full_page_writes = off", "citus.shard_count = 8",
                "citus.log_remote_commands = off", "");
        Path confFile = dir.resolve("postgresql.conf");
        if (asPostgres) {
            run(List.of("runuser", "-u", "postgres", "--", "sh", "-c", "cat >> '" + confFile + "'"), false,
                    conf);
        } else {
            try {
                Files.writeString(confFile, conf, StandardCharsets.UTF_8, java.nio.file.StandardOpenOption.APPEND);
            } catch (IOException e) {
                throw new UncheckedIOException("Could not configure " + confFile, e);
            }
        }
        pg(List.of("pg_ctl", "-D", dir.toString(), "-l", dir + ".log", "-w", "-t", "60", "start"));
    }

    /** Stops one node at once, as a crash would ({@code pg_ctl stop -m immediate}). */
    void stopNode(int port) {
        pg(List.of("pg_ctl", "-D", directory(port).toString(), "-m", "immediate", "-w", "stop"));
    }

    /** Starts a stopped node on the same port and data; returns once it accepts connections. */
    void startNode(int port) {
        Path dir = directory(port);
        pg(List.of("pg_ctl", "-D", dir.toString(), "-l", dir + ".log", "-w", "-t", "60", "start"));
    }

    /** A node's server log (pg_ctl's {@code -l} file). */
    Path logFile(int port) {
        return Paths.get(directory(port) + ".log");
    }

    private Path directory(int port) {
        if (!ports.contains(port)) {
            throw new IllegalArgumentException("No node of this cluster has port " + port + " (ports: " + ports + ")");
        }
        return data.resolve("node-" + port);
    }

    /** Stops the three nodes and deletes their data; run at JVM exit. */
    private void destroy() {
        for (int port : ports) {
            Path dir = data.resolve("node-" + port);
            if (Files.exists(dir.resolve("PG_VERSION"))) {
                try {
                    pg(List.of("pg_ctl", "-D", dir.toString(), "-m", "immediate", "-w", "stop"));
                } catch (RuntimeException e) {
                    System.err.println("[coop-test] could not stop Citus node " + port + ": " + e.getMessage());
                }
            }
        }
        try (Stream<Path> files = Files.walk(data)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            System.err.println("[coop-test] could not delete " + data + ": " + e);
        }
    }

    private void pg(List<String> command) {
        List<String> full = new ArrayList<>();
        if (asPostgres) {
            full.addAll(List.of("runuser", "-u", "postgres", "--"));
        }
        full.add(bin.resolve(command.get(0)).toString());
        full.addAll(command.subList(1, command.size()));
        run(full, true);
    }

    private static List<Integer> freePorts() {
        List<ServerSocket> sockets = new ArrayList<>();
        try {
            for (int i = 0; i < NODES; i++) {
                sockets.add(new ServerSocket(0, 1, InetAddress.getLoopbackAddress()));
            }
            return sockets.stream().map(ServerSocket::getLocalPort).toList();
        } catch (IOException e) {
            throw new UncheckedIOException("Could not find free ports for the Citus cluster", e);
        } finally {
            for (ServerSocket s : sockets) {
                try {
                    s.close();
                } catch (IOException ignored) {
                    // a port we only probed
                }
            }
        }
    }

    /**
     * Runs a command and returns what it wrote (standard output and error together).
     *
     * @param check whether a non-zero exit fails
     * @throws IllegalStateException when it fails (and {@code check}), or takes more than 120 s
     */
    static String run(List<String> command, boolean check) {
        return run(command, check, null);
    }

    /** As {@link #run(List, boolean)}, writing {@code input} to the command; a non-zero exit fails then. */
    private static String run(List<String> command, boolean check, String input) {
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            if (input != null) {
                p.getOutputStream().write(input.getBytes(StandardCharsets.UTF_8));
            }
            p.getOutputStream().close();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(120, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException("Timed out: " + String.join(" ", command));
            }
            if (p.exitValue() != 0 && (check || input != null)) {
                throw new IllegalStateException(
                        "Failed (exit " + p.exitValue() + "): " + String.join(" ", command) + "\n" + out);
            }
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException("Could not run " + command.get(0), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while running " + command.get(0), e);
        }
    }
}
