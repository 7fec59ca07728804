package dev.coop.cli;

import dev.coop.failure.CoopException;
import dev.coop.failure.CoopStoreException;
import dev.coop.failure.CoopValidationException;
import dev.coop.MessageId;
import dev.coop.render.JsonRenderer;
import dev.coop.render.RenderOptions;
import dev.coop.render.Renderers;
import dev.coop.render.TerminalText;
import dev.coop.render.TextRenderer;
import java.io.PrintWriter;
import java.sql.SQLException;
import java.util.Map;
import java.util.Objects;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ScopeType;
import picocli.CommandLine.Spec;
import picocli.CommandLine.TypeConversionException;

/**
 * The {@code coop} command: inspects cooperation trees, event logs, runs and parked runs, cancels and rolls back
 * hierarchies, and migrates the schema, against a PostgreSQL database given by a JDBC URL. Data goes to standard
 * output (as JSON with {@code --json}); errors are one line on standard error, with a non-zero exit code.
 */
@Command(name = "coop", mixinStandardHelpOptions = true, versionProvider = CoopCli.Version.class, description = "Inspect and operate Coop (structured cooperation on PostgreSQL).", subcommands = {
        ReadCommands.Tree.class, ReadCommands.Events.class, ReadCommands.Runs.class, ReadCommands.Parked.class,
        OperatorCommands.Retry.class, OperatorCommands.MarkDone.class, OperatorCommands.Cancel.class,
        OperatorCommands.Rollback.class,
        ReadCommands.Schedules.class, ReadCommands.Join.class, OperatorCommands.Prune.class,
        ToolCommands.Dashboard.class,
        ToolCommands.Completion.class, ToolCommands.Migrate.class,
        Sagas.class, Tasks.ListTasks.class, Tasks.Complete.class,
        Tasks.Fail.class, Counts.class, LaunchCommand.class}, exitCodeListHeading = "%nExit codes:%n", exitCodeList = {
                "0:done",
                "1:the request failed (unknown id, refused, no Coop schema, ...)",
                "2:wrong usage (unknown option, malformed id or value, no --url)",
                "3:the database could not be reached (wrong URL, server down, authentication failed)"}, footer = {
                        "%nThe database comes from --url, --user and --password, or else from COOP_JDBC_URL, "
                                + "COOP_JDBC_USER and COOP_JDBC_PASSWORD."})
public final class CoopCli implements Runnable {
    /** The version of the jar this runs from (its manifest), or of the build when run from classes. */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String v = CoopCli.class.getPackage().getImplementationVersion();
            return new String[]{"coop " + (v != null ? v : "0.1.0-SNAPSHOT") + " (Java "
                    + System.getProperty("java.version") + ")"};
        }
    }

    static final int EXIT_OK = 0;
    static final int EXIT_FAILURE = 1;
    static final int EXIT_USAGE = 2;
    static final int EXIT_UNREACHABLE = 3;

    @Spec
    CommandSpec spec;

    @Option(names = "--url", scope = ScopeType.INHERIT, paramLabel = "<jdbc-url>", description = "JDBC URL of the database (default: $COOP_JDBC_URL), "
            + "e.g. jdbc:postgresql://localhost:5432/postgres")
    String url;

    @Option(names = "--user", scope = ScopeType.INHERIT, description = "Database user (default: $COOP_JDBC_USER)")
    String user;

    @Option(names = "--password", scope = ScopeType.INHERIT, description = "Database password (default: $COOP_JDBC_PASSWORD, which keeps it out of the process list)")
    String password;

    @Option(names = "--schema", scope = ScopeType.INHERIT, defaultValue = "coop", description = "Schema of Coop's tables (default: ${DEFAULT-VALUE})")
    String schema;

    @Option(names = "--json", scope = ScopeType.INHERIT, description = "Print data as JSON (see docs/inspection.md)")
    boolean json;

    @Option(names = "--ascii", scope = ScopeType.INHERIT, description = "Draw with ASCII only")
    boolean ascii;

    /** When to colour: validated while parsing, so {@code --color rainbow} is a usage error even if nothing prints. */
    enum ColorMode {
        AUTO, ALWAYS, NEVER
    }

    @Option(names = "--color", scope = ScopeType.INHERIT, paramLabel = "auto|always|never", defaultValue = "auto", description = "Colours: auto (on a terminal, unless NO_COLOR is set), always, never")
    ColorMode color;

    @Option(names = {"-v", "--verbose"}, scope = ScopeType.INHERIT, description = "Print stack traces of errors")
    boolean verbose;

    private final Map<String, String> env;

    /** The environment the command reads its defaults from. */
    Map<String, String> env() {
        return env;
    }

    /** A command reading its defaults from {@code env}. */
    CoopCli(Map<String, String> env) {
        this.env = Objects.requireNonNull(env, "env");
    }

    public static void main(String[] args) {
        CommandLine commandLine = commandLine(System.getenv());
        int exit = commandLine.execute(args);
        commandLine.getOut().flush(); // print() does not flush, and exit() would drop what is buffered
        commandLine.getErr().flush();
        System.exit(exit);
    }

    /** The command line, ready to execute; its output and error streams may be replaced (tests do). */
    static CommandLine commandLine(Map<String, String> env) {
        CoopCli cli = new CoopCli(env);
        CommandLine commandLine = new CommandLine(cli);
        commandLine.setCaseInsensitiveEnumValuesAllowed(true);
        commandLine.registerConverter(MessageId.class, MESSAGE_ID);
        commandLine.registerConverter(java.util.UUID.class, RUN_ID);
        commandLine.registerConverter(dev.coop.join.JoinId.class, JOIN_ID);
        commandLine.setParameterExceptionHandler((e, args) -> {
            CommandLine c = e.getCommandLine();
            c.getErr().println("coop: " + cli.redact(Database.oneLine(e.getMessage())) + " (see 'coop "
                    + (c.getCommandSpec().parent() == null ? "" : c.getCommandName() + " ") + "--help')");
            return EXIT_USAGE;
        });
        commandLine.setExecutionStrategy(CoopCli::executeWithRoomyStack);
        commandLine.setExecutionExceptionHandler((e, c, parseResult) -> {
            int code = exitCode(e);
            c.getErr().println("coop: " + cli.redact(message(e)));
            if (cli.verbose) {
                java.io.StringWriter trace = new java.io.StringWriter();
                e.printStackTrace(new PrintWriter(trace));
                c.getErr().print(cli.redact(trace.toString()));
            }
            return code;
        });
        return commandLine;
    }

    /** Rendering walks trees recursively; a thread with a large stack prints hierarchies thousands of levels deep. */
    private static final long STACK_BYTES = 512L * 1024 * 1024;

    private static int executeWithRoomyStack(CommandLine.ParseResult parseResult) {
        int[] exit = new int[1];
        RuntimeException[] failed = new RuntimeException[1];
        Thread thread = new Thread(null, () -> {
            try {
                exit[0] = new CommandLine.RunLast().execute(parseResult);
            } catch (RuntimeException e) {
                failed[0] = e;
            } catch (OutOfMemoryError e) { // an Error would end the thread silently, and coop would exit 0
                failed[0] = new CliException(EXIT_FAILURE, "Out of memory (give the JVM a larger heap, java -Xmx...; "
                        + "for large hierarchies, page through events with --limit/--after)", e);
            } catch (Error e) {
                failed[0] = new CliException(EXIT_FAILURE, e.toString(), e);
            }
        }, "coop", STACK_BYTES);
        thread.start();
        try {
            thread.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CommandLine.ExecutionException(parseResult.commandSpec().commandLine(), "Interrupted", e);
        }
        if (failed[0] != null) {
            throw failed[0];
        }
        return exit[0];
    }

    @Override
    public void run() {
        throw new ParameterException(spec.commandLine(), "Missing command: tree, events, runs, parked, cancel, "
                + "rollback or migrate");
    }

    // ---- used by the commands

    Database database() {
        String password = this.password != null ? this.password : env.get("COOP_JDBC_PASSWORD");
        return Database.of(url != null ? url : env.get("COOP_JDBC_URL"),
                user != null ? user : env.get("COOP_JDBC_USER"), password, schema);
    }

    /**
     * Error text as it may be printed: passwords masked (in URLs, and the password given to this command wherever it
     * appears) and control characters escaped, line feeds kept.
     */
    String redact(String text) {
        String s = Database.masked(text);
        java.util.List<String> secrets = new java.util.ArrayList<>(
                Database.passwordsIn(url != null ? url : env.get("COOP_JDBC_URL")));
        secrets.add(this.password != null ? this.password : env.get("COOP_JDBC_PASSWORD"));
        for (String secret : secrets) {
            if (secret != null && secret.length() >= 3) {
                s = s.replace(secret, "***");
            }
        }
        return TerminalText.escapeKeepingLines(s);
    }

    RenderOptions renderOptions() {
        RenderOptions options = switch (color) {
            case ALWAYS -> RenderOptions.defaults().withColors(true);
            case NEVER -> RenderOptions.defaults();
            case AUTO -> {
                RenderOptions terminal = Renderers.terminalOptions();
                yield terminal.withColors(terminal.colors() && !env.containsKey("NO_COLOR"));
            }
        };
        return ascii ? options.withUnicode(false) : options;
    }

    TextRenderer text() {
        return new TextRenderer(renderOptions());
    }

    JsonRenderer jsonRenderer() {
        return Renderers.json();
    }

    PrintWriter out() {
        return spec.commandLine().getOut();
    }

    PrintWriter err() {
        return spec.commandLine().getErr();
    }

    // ---- errors

    static final ITypeConverter<MessageId> MESSAGE_ID = value -> {
        try {
            return MessageId.parse(value);
        } catch (CoopValidationException e) {
            throw new TypeConversionException(e.getMessage());
        }
    };

    /** Run ids, as strict as message ids (picocli's own UUID converter takes "1-1-1-1-1"). */
    static final ITypeConverter<java.util.UUID> RUN_ID = value -> {
        try {
            return MessageId.parse(value).value();
        } catch (CoopValidationException e) {
            throw new TypeConversionException("Not a run id (a UUID was expected): '" + value + "'");
        }
    };

    static final ITypeConverter<dev.coop.join.JoinId> JOIN_ID = value -> {
        try {
            return dev.coop.join.JoinId.parse(value);
        } catch (CoopValidationException e) {
            throw new TypeConversionException(e.getMessage());
        }
    };

    private static int exitCode(Exception e) {
        if (e instanceof CliException c) {
            return c.exitCode();
        }
        if (e instanceof CoopStoreException && e.getCause() instanceof SQLException sql) {
            String state = sql.getSQLState();
            if (state != null && (state.startsWith("08") || state.startsWith("28") || state.equals("3D000"))) {
                return EXIT_UNREACHABLE;
            }
        }
        return EXIT_FAILURE;
    }

    private static String message(Exception e) {
        if (e instanceof CliException || e instanceof CoopException) {
            return Database.describe(e);
        }
        return e.getClass().getSimpleName() + ": " + Database.describe(e);
    }
}
