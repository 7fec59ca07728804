package dev.coop.spring;

import dev.coop.Coop;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;

/** Coop's settings under {@code coop.*}; each default is the core builders' own. */
@ConfigurationProperties("coop")
public class CoopProperties {
    /** The PostgreSQL schema of Coop's tables. */
    private String schema = Coop.DEFAULT_SCHEMA;
    /** Whether to apply Coop's schema migrations at start. */
    private boolean migrate = true;
    /** The largest payload accepted, in bytes of JSON. */
    private int maxPayloadBytes = Coop.DEFAULT_MAX_PAYLOAD_BYTES;
    /** Whether launching on a topic that no saga handles fails (instead of storing the message). */
    private boolean requireHandlers;
    private final Engine engine = new Engine();
    private final Health health = new Health();
    private final Metrics metrics = new Metrics();
    private final Tracing tracing = new Tracing();
    private final Dashboard dashboard = new Dashboard();

    public String getSchema() {
        return schema;
    }

    public void setSchema(String schema) {
        this.schema = schema;
    }

    public boolean isMigrate() {
        return migrate;
    }

    public void setMigrate(boolean migrate) {
        this.migrate = migrate;
    }

    public int getMaxPayloadBytes() {
        return maxPayloadBytes;
    }

    public void setMaxPayloadBytes(int maxPayloadBytes) {
        this.maxPayloadBytes = maxPayloadBytes;
    }

    public boolean isRequireHandlers() {
        return requireHandlers;
    }

    public void setRequireHandlers(boolean requireHandlers) {
        this.requireHandlers = requireHandlers;
    }

    public Engine getEngine() {
        return engine;
    }

    public Health getHealth() {
        return health;
    }

    public Metrics getMetrics() {
        return metrics;
    }

    public Tracing getTracing() {
        return tracing;
    }

    public Dashboard getDashboard() {
        return dashboard;
    }

    /** The engine that runs this application's {@code Saga} beans. */
    public static class Engine {
        /** Whether to run an engine; off gives a client-only service (launch and inspect). */
        private boolean enabled = true;
        /** A readable name for the engine; its id is the name plus a random suffix. */
        private String name = "coop";
        /** How many steps the engine executes at once, each on its own connection. */
        private int workers = Coop.DEFAULT_WORKERS;
        /** At most how many runs of one saga a worker advances in one transaction (1: one run per transaction). */
        private int maxRunsPerTransaction = Coop.DEFAULT_MAX_RUNS_PER_TRANSACTION;
        /** How often the engine looks for work it was not told about (unset: 1 s; 100 ms on Citus). */
        private Duration pollInterval;
        /**
         * Whether to LISTEN for wake-ups on a dedicated connection (off behind PgBouncer in transaction mode; unset: on,
         * except on Citus, where engines poll).
         */
        private Boolean notifications;
        /** Whether this engine fires due schedules. */
        private boolean schedules = true;
        /** How long stopping waits for steps in flight. */
        private Duration shutdownTimeout = Coop.DEFAULT_SHUTDOWN_TIMEOUT;
        /** How long each of the engine's own statements may wait for the database (0: no bound). */
        private Duration databaseTimeout = Coop.DEFAULT_DATABASE_TIMEOUT;
        /**
         * The idle_in_transaction_session_timeout of each step's transaction (0: the server's); longer than any step
         * keeps its transaction idle.
         */
        private Duration idleInTransactionTimeout = Coop.DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT;

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        public String getName() {
            return name;
        }

        public void setName(String name) {
            this.name = name;
        }

        public int getWorkers() {
            return workers;
        }

        public void setWorkers(int workers) {
            this.workers = workers;
        }

        public int getMaxRunsPerTransaction() {
            return maxRunsPerTransaction;
        }

        public void setMaxRunsPerTransaction(int maxRunsPerTransaction) {
            this.maxRunsPerTransaction = maxRunsPerTransaction;
        }

        public Duration getPollInterval() {
            return pollInterval;
        }

        public void setPollInterval(Duration pollInterval) {
            this.pollInterval = pollInterval;
        }

        public Boolean getNotifications() {
            return notifications;
        }

        public void setNotifications(Boolean notifications) {
            this.notifications = notifications;
        }

        public boolean isSchedules() {
            return schedules;
        }

        public void setSchedules(boolean schedules) {
            this.schedules = schedules;
        }

        public Duration getShutdownTimeout() {
            return shutdownTimeout;
        }

        public void setShutdownTimeout(Duration shutdownTimeout) {
            this.shutdownTimeout = shutdownTimeout;
        }

        public Duration getDatabaseTimeout() {
            return databaseTimeout;
        }

        public void setDatabaseTimeout(Duration databaseTimeout) {
            this.databaseTimeout = databaseTimeout;
        }

        public Duration getIdleInTransactionTimeout() {
            return idleInTransactionTimeout;
        }

        public void setIdleInTransactionTimeout(Duration idleInTransactionTimeout) {
            this.idleInTransactionTimeout = idleInTransactionTimeout;
        }
    }

    /** The Actuator health indicator {@code coop}. */
    public static class Health {
        /** How many parked runs turn the indicator's status to WARNING. */
        private long parkedThreshold = 1;

        public long getParkedThreshold() {
            return parkedThreshold;
        }

        public void setParkedThreshold(long parkedThreshold) {
            this.parkedThreshold = parkedThreshold;
        }
    }

    /** Micrometer metrics (when coop-micrometer and a MeterRegistry are present). */
    public static class Metrics {
        /** Whether to record Coop's metrics. */
        private boolean enabled = true;
        /** How often the gauges coop.runs count the unfinished runs, at most. */
        private Duration runsRefresh = Duration.ofSeconds(15);
        /** How often the gauges coop.tasks.open and coop.tasks.oldest.age read the open external tasks. */
        private Duration tasksRefresh = Duration.ofSeconds(15);

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        public Duration getRunsRefresh() {
            return runsRefresh;
        }

        public void setRunsRefresh(Duration runsRefresh) {
            this.runsRefresh = runsRefresh;
        }

        public Duration getTasksRefresh() {
            return tasksRefresh;
        }

        public void setTasksRefresh(Duration tasksRefresh) {
            this.tasksRefresh = tasksRefresh;
        }
    }

    /** OpenTelemetry traces (when coop-opentelemetry is present). */
    public static class Tracing {
        /** Whether to trace steps and carry the trace context with messages. */
        private boolean enabled = true;

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }
    }

    /** The web dashboard (when coop-dashboard is present), mounted in this application's servlet container. */
    public static class Dashboard {
        /** Whether to serve the dashboard; off by default. */
        private boolean enabled;
        /** The path it is served under. */
        private String path = "/coop";
        /** The role that may act (cancel, roll back, retry, mark done); others with the viewer role only look. */
        private String operatorRole = "COOP_OPERATOR";
        /** The role that may look; null lets any authenticated user look. */
        private String viewerRole = "COOP_VIEWER";
        /**
         * Fields whose values payloads, results and context values show as {@code ***}: names or globs
         * ({@code password}, {@code *token*}), matched at any depth; none by default.
         */
        private java.util.List<String> mask = java.util.List.of();

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        public String getPath() {
            return path;
        }

        public void setPath(String path) {
            if (path == null || !path.matches("(/[A-Za-z0-9._~-]+)+")) {
                throw new IllegalArgumentException("coop.dashboard.path must look like /coop or /admin/coop, was '"
                        + path + "'");
            }
            this.path = path;
        }

        public String getOperatorRole() {
            return operatorRole;
        }

        public void setOperatorRole(String operatorRole) {
            this.operatorRole = operatorRole;
        }

        public String getViewerRole() {
            return viewerRole;
        }

        public void setViewerRole(String viewerRole) {
            this.viewerRole = viewerRole;
        }

        public java.util.List<String> getMask() {
            return mask;
        }

        public void setMask(java.util.List<String> mask) {
            this.mask = mask == null ? java.util.List.of() : java.util.List.copyOf(mask);
        }
    }
}
