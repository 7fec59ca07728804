package dev.coop.examples;

import dev.coop.Saga;
import dev.coop.StepContext;
import dev.coop.Topic;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;

/**
 * A customer onboarding: the accounts service creates an account and then its
 * contract, emitting {@code ACCOUNT_CREATED} and {@code CONTRACT_CREATED}. CRM, billing and access provisioning handle
 * {@code ACCOUNT_CREATED}; billing schedules invoices on {@code CONTRACT_CREATED}, with the invoicing e-mail it stored
 * from the account; access provisioning asks the support portal for a user. The welcome e-mail goes out last.
 *
 * <p>
 * Every step writes its business rows in its own transaction ({@code step.connection()}), in tables of the schema
 * {@value #SCHEMA}: what a step did commits together with the messages it launched, and compensations delete it
 * again. The invoicing handler reads the billing account that the account handler wrote, and the invoice schedule
 * has a foreign key to it: had the contract been handled early, it would fail.
 */
public final class Onboarding {
    /** The schema of the demo's business tables. */
    public static final String SCHEMA = "onboarding_demo";

    public record NewCustomer(String accountId, String name, String invoicingEmail, String supportTier) {
    }

    public record AccountCreated(String accountId, String name, String invoicingEmail, String supportTier) {
    }

    public record ContractCreated(String contractId, String accountId) {
    }

    public record PortalUserRequested(String accountId, String login) {
    }

    public static final Topic<NewCustomer> ONBOARDING_REQUESTED = Topic.of("onboarding-requested",
            NewCustomer.class);
    public static final Topic<AccountCreated> ACCOUNT_CREATED = Topic.of("account-created", AccountCreated.class);
    public static final Topic<ContractCreated> CONTRACT_CREATED = Topic.of("contract-created",
            ContractCreated.class);
    public static final Topic<PortalUserRequested> PORTAL_USER_REQUESTED = Topic.of("portal-user-requested",
            PortalUserRequested.class);

    /** Support tiers access provisioning knows; any other fails the grant. */
    static final Set<String> SUPPORT_TIERS = Set.of("basic", "premium", "enterprise");
    /** Enterprise contracts wait for a manager's approval: an external task, completed from the dashboard. */
    static final String APPROVED_TIER = "enterprise";
    /** The name of the approval task. */
    public static final String APPROVAL = "manager-approval";

    /** What the manager answers. */
    public record Approval(String manager, boolean approved) {
    }

    /** The correlation key of an account's approval task (what the dashboard, the CLI or an HTTP endpoint use). */
    public static String approvalKey(String accountId) {
        return "approval/" + accountId;
    }
    /** How often access provisioning asks the support portal for a user before it gives up. */
    static final int PORTAL_ATTEMPTS = 3;

    /** One service of the demo: its name and the sagas its engine runs. */
    public record Service(String name, List<Saga<?>> sagas) {
    }

    /**
     * The external systems the services talk to, simulated in memory so scenarios can make them misbehave: the
     * support portal can time out a number of times per account, and the ERP can keep billing waiting.
     */
    public static final class World {
        private final Map<String, AtomicInteger> portalTimeouts = new ConcurrentHashMap<>();
        private final Map<String, Hold> erpHolds = new ConcurrentHashMap<>();

        /** The support portal will time out {@code times} times for this account. */
        public void portalTimesOut(String accountId, int times) {
            portalTimeouts.put(accountId, new AtomicInteger(times));
        }

        /** The ERP keeps the invoicing step of this account waiting until released or cancelled. */
        public Hold erpHangs(String accountId) {
            return erpHangs(accountId, Duration.ofSeconds(30));
        }

        /** The ERP keeps the invoicing step waiting until released or cancelled, or until {@code patience} ran out. */
        public Hold erpHangs(String accountId, Duration patience) {
            Hold hold = new Hold(patience);
            erpHolds.put(accountId, hold);
            return hold;
        }

        boolean portalTimeout(String accountId) {
            AtomicInteger left = portalTimeouts.get(accountId);
            return left != null && left.getAndDecrement() > 0;
        }

        Hold erpHold(String accountId) {
            return erpHolds.get(accountId);
        }
    }

    /** A step held at a point: the scenario learns it arrived, and may let it go. */
    public static final class Hold {
        private final CountDownLatch arrived = new CountDownLatch(1);
        private final CountDownLatch released = new CountDownLatch(1);
        private final Duration patience;

        Hold(Duration patience) {
            this.patience = patience;
        }

        public boolean awaitArrival(Duration timeout) throws InterruptedException {
            return arrived.await(timeout.toMillis(), TimeUnit.MILLISECONDS);
        }

        public void release() {
            released.countDown();
        }
    }

    private final World world;
    private final Progress progress;

    public Onboarding(World world, Progress progress) {
        this.world = world;
        this.progress = progress;
    }

    /** The services: each runs in an engine of its own, with a connection pool of its own. */
    public List<Service> services() {
        return List.of(
                new Service("accounts", List.of(onboarding())),
                new Service("crm", List.of(crm())),
                new Service("billing", List.of(billingAccount(), invoicing())),
                new Service("access", List.of(accessProvisioning())),
                new Service("portal", List.of(supportPortal())));
    }

    /** The accounts service: creates the account, then the contract, then sends the welcome e-mail. */
    Saga<NewCustomer> onboarding() {
        return Saga.on(ONBOARDING_REQUESTED, "onboarding")
                .step("create-account", step -> {
                    NewCustomer c = step.payload();
                    update(step, "INSERT INTO {s}.account (id, name, invoicing_email) VALUES (?, ?, ?)", c.accountId(),
                            c.name(), c.invoicingEmail());
                    step.launch(ACCOUNT_CREATED,
                            new AccountCreated(c.accountId(), c.name(), c.invoicingEmail(), c.supportTier()));
                    say(step, "account " + c.accountId() + " created; ACCOUNT_CREATED launched");
                })
                .compensateWith((step, cause) -> {
                    update(step, "DELETE FROM {s}.account WHERE id = ?", step.payload().accountId());
                    say(step, "compensation: account " + step.payload().accountId() + " deleted");
                })
                .step("create-contract", step -> {
                    String account = step.payload().accountId();
                    String contract = "ctr-" + account;
                    update(step, "INSERT INTO {s}.contract (id, account_id) VALUES (?, ?)", contract, account);
                    step.launch(CONTRACT_CREATED, new ContractCreated(contract, account));
                    say(step, "every ACCOUNT_CREATED handler finished: contract " + contract
                            + " created; CONTRACT_CREATED launched");
                    if (APPROVED_TIER.equals(step.payload().supportTier())) {
                        step.openTask(APPROVAL, Map.of("account", account, "contract", contract),
                                dev.coop.TaskOptions.none().key(approvalKey(account)));
                        say(step, "enterprise contract: waiting for a manager's approval (external task "
                                + approvalKey(account) + ": coop complete, or the dashboard)");
                    }
                })
                .compensateWith((step, cause) -> {
                    update(step, "DELETE FROM {s}.contract WHERE account_id = ?", step.payload().accountId());
                    say(step, "compensation: contract of " + step.payload().accountId() + " deleted");
                })
                .step("send-welcome-email", step -> {
                    NewCustomer c = step.payload();
                    if (APPROVED_TIER.equals(c.supportTier())) {
                        Approval approval = step.taskResult(APPROVAL, Approval.class);
                        if (!approval.approved()) {
                            throw new IllegalStateException("Manager " + approval.manager() + " rejected the contract");
                        }
                        say(step, "approved by " + approval.manager());
                    }
                    update(step, "INSERT INTO {s}.outbox_email (account_id, kind, recipient) VALUES (?, 'welcome', ?)",
                            c.accountId(), c.invoicingEmail());
                    say(step, "everything is done: welcome e-mail to " + c.invoicingEmail() + " queued");
                })
                .build();
    }

    /** CRM: a customer record for every new account. */
    Saga<AccountCreated> crm() {
        return Saga.on(ACCOUNT_CREATED, "crm")
                .step("create-customer", step -> {
                    update(step, "INSERT INTO {s}.crm_customer (account_id, name) VALUES (?, ?)",
                            step.payload().accountId(), step.payload().name());
                    say(step, "customer '" + step.payload().name() + "' created");
                })
                .compensateWith((step, cause) -> {
                    update(step, "DELETE FROM {s}.crm_customer WHERE account_id = ?", step.payload().accountId());
                    say(step, "compensation: customer deleted");
                })
                .build();
    }

    /** Billing, on accounts: keeps the invoicing e-mail, which only the account carries. */
    Saga<AccountCreated> billingAccount() {
        return Saga.on(ACCOUNT_CREATED, "billing-account")
                .step("open-billing-account", step -> {
                    update(step, "INSERT INTO {s}.billing_account (account_id, invoicing_email) VALUES (?, ?)",
                            step.payload().accountId(), step.payload().invoicingEmail());
                    say(step, "billing account opened, invoices go to " + step.payload().invoicingEmail());
                })
                .compensateWith((step, cause) -> {
                    update(step, "DELETE FROM {s}.billing_account WHERE account_id = ?", step.payload().accountId());
                    say(step, "compensation: billing account closed");
                })
                .build();
    }

    /** Billing, on contracts: schedules invoices to the invoicing e-mail of the contract's account. */
    Saga<ContractCreated> invoicing() {
        return Saga.on(CONTRACT_CREATED, "invoicing")
                .step("schedule-invoices", step -> {
                    String account = step.payload().accountId();
                    String email = invoicingEmail(step.connection(), account);
                    if (email == null) {
                        throw new IllegalStateException("No billing account for " + account
                                + ": CONTRACT_CREATED was handled before ACCOUNT_CREATED");
                    }
                    Hold hold = world.erpHold(account);
                    if (hold != null) {
                        say(step, "the ERP is slow today; waiting for it (and checking for cancellation)");
                        hold.arrived.countDown();
                        long deadline = System.nanoTime() + hold.patience.toNanos();
                        while (!hold.released.await(20, TimeUnit.MILLISECONDS)) {
                            step.giveUpIfRequested();
                            if (System.nanoTime() > deadline) {
                                throw new IllegalStateException("The ERP did not answer within " + hold.patience);
                            }
                        }
                    }
                    update(step, "INSERT INTO {s}.invoice_schedule (contract_id, account_id, send_to) VALUES (?, ?, ?)",
                            step.payload().contractId(), account, email);
                    say(step, "monthly invoices for " + step.payload().contractId() + " scheduled, sent to " + email);
                })
                .compensateWith((step, cause) -> {
                    update(step, "DELETE FROM {s}.invoice_schedule WHERE contract_id = ?", step.payload().contractId());
                    say(step, "compensation: invoices unscheduled");
                })
                .build();
    }

    /**
     * Access provisioning: a support-portal user (through the portal service, retried by the child-failure handler
     * when the portal times out), then the support access of the account's tier.
     */
    Saga<AccountCreated> accessProvisioning() {
        return Saga.on(ACCOUNT_CREATED, "access-provisioning")
                .step("request-portal-user", step -> {
                    step.launch(PORTAL_USER_REQUESTED,
                            new PortalUserRequested(step.payload().accountId(), step.payload().invoicingEmail()));
                    say(step, "portal user requested from the support portal");
                })
                .onChildFailure((step, failure) -> {
                    // attempts are counted in this service's table, in the handler's transaction: durable
                    update(step, "INSERT INTO {s}.portal_attempt (run_id) VALUES (?)", step.runId());
                    int failed = count(step.connection(), "SELECT count(*) FROM {s}.portal_attempt WHERE run_id = ?",
                            step.runId());
                    if (failed >= PORTAL_ATTEMPTS) {
                        say(step, "the support portal failed " + failed + " times; giving up");
                        throw failure;
                    }
                    step.launch(PORTAL_USER_REQUESTED,
                            new PortalUserRequested(step.payload().accountId(), step.payload().invoicingEmail()));
                    say(step, "the support portal failed (" + failure.failure().causes().getFirst().message()
                            + "); asking again, attempt " + (failed + 1) + " of " + PORTAL_ATTEMPTS);
                })
                .step("grant-support-access", step -> {
                    String tier = step.payload().supportTier();
                    if (!SUPPORT_TIERS.contains(tier)) {
                        say(step, "support tier '" + tier + "' does not exist: failing");
                        throw new IllegalArgumentException("Support tier '" + tier + "' does not exist");
                    }
                    update(step, "INSERT INTO {s}.support_access (account_id, tier) VALUES (?, ?)",
                            step.payload().accountId(), tier);
                    say(step, tier + " support access granted");
                })
                .compensateWith((step, cause) -> {
                    update(step, "DELETE FROM {s}.support_access WHERE account_id = ?", step.payload().accountId());
                    say(step, "compensation: support access revoked");
                })
                .build();
    }

    /** The support portal's adapter: creates a portal user, unless the portal times out. */
    Saga<PortalUserRequested> supportPortal() {
        return Saga.on(PORTAL_USER_REQUESTED, "support-portal")
                .step("create-portal-user", step -> {
                    if (world.portalTimeout(step.payload().accountId())) {
                        say(step, "the support portal did not answer: failing");
                        throw new java.net.SocketTimeoutException("Support portal did not answer within 2 s");
                    }
                    update(step, "INSERT INTO {s}.portal_user (account_id, login) VALUES (?, ?)",
                            step.payload().accountId(), step.payload().login());
                    say(step, "portal user " + step.payload().login() + " created");
                })
                .compensateWith((step, cause) -> {
                    update(step, "DELETE FROM {s}.portal_user WHERE account_id = ?", step.payload().accountId());
                    say(step, "compensation: portal user deleted");
                })
                .build();
    }

    // ---- the business tables

    /** The business tables; the demo's database starts empty. */
    public static void createTables(DataSource dataSource) throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
            s.execute(sql("""
                    CREATE SCHEMA IF NOT EXISTS {s};
                    CREATE TABLE IF NOT EXISTS {s}.account (
                      id text PRIMARY KEY, name text NOT NULL, invoicing_email text NOT NULL);
                    CREATE TABLE IF NOT EXISTS {s}.contract (
                      id text PRIMARY KEY, account_id text NOT NULL REFERENCES {s}.account (id));
                    CREATE TABLE IF NOT EXISTS {s}.crm_customer (account_id text PRIMARY KEY, name text NOT NULL);
                    CREATE TABLE IF NOT EXISTS {s}.billing_account (
                      account_id text PRIMARY KEY, invoicing_email text NOT NULL);
                    CREATE TABLE IF NOT EXISTS {s}.invoice_schedule (
                      contract_id text PRIMARY KEY,
                      account_id text NOT NULL REFERENCES {s}.billing_account (account_id),
                      send_to text NOT NULL);
                    CREATE TABLE IF NOT EXISTS {s}.portal_user (account_id text PRIMARY KEY, login text NOT NULL);
                    CREATE TABLE IF NOT EXISTS {s}.portal_attempt (run_id uuid NOT NULL);
                    CREATE TABLE IF NOT EXISTS {s}.support_access (account_id text PRIMARY KEY, tier text NOT NULL);
                    CREATE TABLE IF NOT EXISTS {s}.outbox_email (
                      id bigserial PRIMARY KEY, account_id text NOT NULL, kind text NOT NULL, recipient text NOT NULL);
                    """));
        }
    }

    /** The business rows of an account, per table ({@code table -> rows}), in a fixed order. */
    public static Map<String, Integer> rowsOf(DataSource dataSource, String accountId) throws SQLException {
        Map<String, Integer> rows = new java.util.LinkedHashMap<>();
        try (Connection c = dataSource.getConnection()) {
            rows.put("account", count(c, "SELECT count(*) FROM {s}.account WHERE id = ?", accountId));
            for (String table : List.of("contract", "crm_customer", "billing_account", "invoice_schedule",
                    "portal_user", "support_access")) {
                rows.put(table, count(c, "SELECT count(*) FROM {s}." + table + " WHERE account_id = ?", accountId));
            }
            rows.put("welcome_email",
                    count(c, "SELECT count(*) FROM {s}.outbox_email WHERE account_id = ? AND kind = 'welcome'",
                            accountId));
        }
        return rows;
    }

    /** The invoicing e-mail of an invoice schedule of the account, or null. */
    public static String invoicesSentTo(DataSource dataSource, String accountId) throws SQLException {
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement(
                        sql("SELECT send_to FROM {s}.invoice_schedule WHERE account_id = ?"))) {
            ps.setString(1, accountId);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        }
    }

    private static String invoicingEmail(Connection c, String accountId) throws SQLException {
        try (PreparedStatement ps = c
                .prepareStatement(sql("SELECT invoicing_email FROM {s}.billing_account WHERE account_id = ?"))) {
            ps.setString(1, accountId);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        }
    }

    private static void update(StepContext<?> step, String statement, Object... values) throws SQLException {
        try (PreparedStatement ps = step.connection().prepareStatement(sql(statement))) {
            for (int i = 0; i < values.length; i++) {
                ps.setObject(i + 1, values[i]);
            }
            ps.executeUpdate();
        }
    }

    private static int count(Connection c, String query, Object value) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql(query))) {
            ps.setObject(1, value);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    private static String sql(String statement) {
        return statement.replace("{s}", SCHEMA);
    }

    private void say(StepContext<?> step, String text) {
        progress.step(step.engineId(), step.saga(), step.step(), text);
    }
}
