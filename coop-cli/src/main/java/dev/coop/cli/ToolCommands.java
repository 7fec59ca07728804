package dev.coop.cli;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.dashboard.DashboardServer;
import dev.coop.failure.CoopValidationException;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

/** The subcommands of {@code coop} around the database: the dashboard, shell completion and migrations. */
final class ToolCommands {
    private ToolCommands() {
    }

    @Command(name = "dashboard", mixinStandardHelpOptions = true, description = "Serve the web dashboard (runs,"
            + " hierarchies with their timeline and stack trace, schedules, joins, audited actions) until Ctrl-C."
            + " Users come from COOP_DASHBOARD_USERS (name:password:role,... with role viewer or operator) and"
            + " COOP_DASHBOARD_TOKEN (an operator token); with neither, a random operator token is made and its"
            + " login link printed. COOP_DASHBOARD_KEYSTORE (and COOP_DASHBOARD_KEYSTORE_PASSWORD) serve HTTPS.")
    static final class Dashboard extends Commands.Base {
        @Option(names = "--port", paramLabel = "<port>", defaultValue = "8080", description = "Port (default ${DEFAULT-VALUE})")
        int port;

        @Option(names = "--bind", paramLabel = "<address>", defaultValue = "127.0.0.1", description = "Address to listen on (default ${DEFAULT-VALUE}: this machine only)")
        String bind;

        @Override
        public void run() {
            DashboardServer.Builder builder;
            try {
                builder = DashboardServer.builder(database().client).port(port).bind(bind)
                        .fromEnvironment(cli.env());
            } catch (IllegalArgumentException e) {
                throw new CliException(CoopCli.EXIT_USAGE, e.getMessage(), e);
            }
            String token = builder.ensureAccess();
            DashboardServer server;
            try {
                server = builder.start();
            } catch (java.io.IOException e) {
                throw new CliException(CoopCli.EXIT_FAILURE, "Could not listen on " + bind + ":" + port + ": "
                        + e.getMessage(), e);
            }
            CountDownLatch stopped = new CountDownLatch(1);
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                server.close();
                stopped.countDown();
            }));
            cli.out().println(DashboardServer.started(server, token));
            cli.out().println("Press Ctrl-C to stop.");
            cli.out().flush();
            try {
                stopped.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                server.close();
            }
        }
    }

    @Command(name = "completion", mixinStandardHelpOptions = true, description = "Print a bash/zsh completion script"
            + " for coop: source <(coop completion)")
    static final class Completion implements Runnable {
        @ParentCommand
        CoopCli cli;

        @Override
        public void run() {
            cli.out().print(picocli.AutoComplete.bash("coop", cli.spec.commandLine()));
        }
    }

    @Command(name = "migrate", mixinStandardHelpOptions = true, description = "Create or update Coop's tables in the schema (under an advisory lock; safe while engines"
            + " run). With --print, only print the SQL, for teams that apply migrations themselves.")
    static final class Migrate implements Runnable {
        @ParentCommand
        CoopCli cli;

        @Option(names = "--print", description = "Print the SQL of every migration instead of applying it")
        boolean print;

        @Override
        public void run() {
            if (print) {
                try {
                    cli.out().print(Coop.migrationSql(cli.schema));
                } catch (CoopValidationException e) {
                    throw new CliException(CoopCli.EXIT_USAGE, e.getMessage(), e);
                }
                return;
            }
            Database db = cli.database();
            Integer before = db.schemaVersion();
            try {
                CoopClient.builder(db.dataSource).schema(db.schema).migrate(true).build();
            } catch (dev.coop.failure.CoopStoreException e) {
                if (e.getCause() instanceof java.sql.SQLException sql) {
                    throw db.failure("migrate schema '" + db.schema + "'", sql);
                }
                throw e;
            }
            int after = db.schemaVersion();
            int was = before == null ? 0 : before;
            if (cli.json) {
                ObjectNode n = JsonNodeFactory.instance.objectNode();
                n.put("schema", db.schema);
                n.put("versionBefore", was);
                n.put("version", after);
                cli.out().println(cli.jsonRenderer().write(n));
                return;
            }
            cli.out().println(after == was
                    ? "Schema '" + db.schema + "' is up to date (version " + after + ")."
                    : "Schema '" + db.schema + "' migrated from version " + was + " to " + after + ".");
        }
    }
}
