package dev.coop.examples;

import com.zaxxer.hikari.HikariDataSource;
import dev.coop.CancelResult;
import dev.coop.failure.CancellationRequestedException;
import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.CoopEngine;
import dev.coop.CooperationContext;
import dev.coop.Deadline;
import dev.coop.failure.HappyPathDeadlineMissedException;
import dev.coop.Deadlines;
import dev.coop.failure.Failure;
import dev.coop.inspect.Hierarchy;
import dev.coop.MessageId;
import dev.coop.inspect.Outcome;
import dev.coop.RunStatus;
import dev.coop.inspect.RunView;
import dev.coop.inspect.StepView;
import dev.coop.examples.Onboarding.Hold;
import dev.coop.examples.Onboarding.NewCustomer;
import java.sql.SQLException;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

/**
 * The demo's scenarios, runnable from {@link Demo} and from tests: each launches an onboarding, waits for its whole
 * hierarchy, and checks that it ended as designed (outcome, business rows, order). Start the services with
 * {@link #start(Pools, Progress)}; close to stop them and their pools.
 */
public final class Scenarios implements AutoCloseable {
    /** How long one scenario may take at most. */
    static final Duration WAIT = Duration.ofSeconds(30);

    /** Opens the connection pool of a service. */
    @FunctionalInterface
    public interface Pools {
        HikariDataSource open(String service, int maxPoolSize);
    }

    public enum Verdict {
        AS_DESIGNED, NOT_AS_DESIGNED, SKIPPED
    }

    /** One thing a scenario checks. */
    public record Check(String what, boolean passed) {
    }

    /**
     * How a scenario ended.
     *
     * @param outcome null when skipped
     * @param tree the hierarchy of its onboarding; null when skipped
     */
    public record Result(int number, String title, Verdict verdict, Outcome outcome, String summary, Hierarchy tree,
            List<Check> checks) {
        /** Skipped scenarios count as designed: they are skipped on purpose. */
        public boolean asDesigned() {
            return verdict != Verdict.NOT_AS_DESIGNED;
        }
    }

    private final List<HikariDataSource> pools;
    private final List<CoopEngine> engines;
    private final HikariDataSource data;
    private final CoopClient client;
    private final Onboarding.World world;
    private final Progress progress;
    private final String tag = Integer.toHexString(0x1000 + ThreadLocalRandom.current().nextInt(0xf000));
    private final AtomicInteger customers = new AtomicInteger();

    private Scenarios(List<HikariDataSource> pools, List<CoopEngine> engines, HikariDataSource data,
            Onboarding.World world, Progress progress) {
        this.pools = pools;
        this.engines = engines;
        this.data = data;
        this.client = engines.getFirst().client();
        this.world = world;
        this.progress = progress;
    }

    /** Creates the business tables and starts every service: an engine of two workers on a pool of its own. */
    public static Scenarios start(Pools pools, Progress progress) throws SQLException {
        Objects.requireNonNull(pools, "pools");
        Objects.requireNonNull(progress, "progress");
        Onboarding.World world = new Onboarding.World();
        List<HikariDataSource> opened = new ArrayList<>();
        List<CoopEngine> engines = new ArrayList<>();
        try {
            for (Onboarding.Service service : new Onboarding(world, progress).services()) {
                HikariDataSource pool = pools.open(service.name(), 6);
                opened.add(pool);
                if (engines.isEmpty()) {
                    Onboarding.createTables(pool);
                }
                engines.add(Coop.engine(pool).name(service.name()).workers(2)
                        .register(service.sagas().toArray(dev.coop.Saga<?>[]::new)).start());
            }
            return new Scenarios(opened, engines, opened.getFirst(), world, progress);
        } catch (SQLException | RuntimeException e) {
            engines.forEach(CoopEngine::close);
            opened.forEach(HikariDataSource::close);
            throw e;
        }
    }

    /** The client the operator uses (the accounts service's). */
    public CoopClient client() {
        return client;
    }

    /** The names of the services, in start order. */
    public List<String> services() {
        return pools.stream().map(HikariDataSource::getPoolName).toList();
    }

    /** Every scenario, in order. */
    public List<Result> runAll() throws Exception {
        List<Result> results = new ArrayList<>();
        results.add(everythingSucceeds());
        results.add(accessProvisioningFails());
        results.add(flakyPortalIsRetried());
        results.add(deadlineIsMissed());
        results.add(operatorCancels());
        results.add(managerApproves());
        results.add(approvalNeverComes());
        return results;
    }

    /** 1: everything succeeds, in the order the rule dictates. */
    public Result everythingSucceeds() throws Exception {
        NewCustomer customer = customer("ada", "Ada Lovelace", "basic");
        Run run = launch(customer);
        Hierarchy tree = run.tree();
        RunView onboarding = tree.runs().getFirst();
        List<Check> checks = new ArrayList<>();
        checks.add(new Check("the onboarding committed", run.outcome() == Outcome.COMMITTED));
        List<String> violations = barrierViolations(tree);
        checks.add(new Check("no step started before the runs of the previous step finished" + details(violations),
                violations.isEmpty()));
        OffsetDateTime accountHandlersDone = latest(childrenOf(onboarding, "create-account"));
        StepView contract = step(onboarding, "create-contract");
        checks.add(new Check("the contract was created after crm, billing and access provisioning finished",
                contract != null && accountHandlersDone != null
                        && !start(contract).isBefore(accountHandlersDone)));
        checks.add(new Check("invoices go to the account's invoicing e-mail",
                customer.invoicingEmail().equals(Onboarding.invoicesSentTo(data, customer.accountId()))));
        StepView welcome = step(onboarding, "send-welcome-email");
        OffsetDateTime everythingElse = latest(onboarding.children().stream()
                .flatMap(r -> r.flatten().stream()).toList());
        checks.add(new Check("the welcome e-mail went out after everything else had finished",
                welcome != null && everythingElse != null && !start(welcome).isBefore(everythingElse)));
        Map<String, Integer> rows = Onboarding.rowsOf(data, customer.accountId());
        checks.add(new Check("every service wrote its rows once " + rows,
                rows.values().stream().allMatch(n -> n == 1)));
        String summary = run.outcome() + " in " + took(tree) + ": the contract waited for crm, billing and access "
                + "provisioning (created " + gap(accountHandlersDone, contract) + " after the last finished); "
                + "invoices go to " + customer.invoicingEmail() + "; the welcome e-mail went out last";
        return result(1, "everything succeeds", run, summary, checks);
    }

    /** 2: access provisioning fails; everything rolls back, children first, and no welcome e-mail goes out. */
    public Result accessProvisioningFails() throws Exception {
        NewCustomer customer = customer("grace", "Grace Hopper", "platinum");
        Run run = launch(customer);
        Hierarchy tree = run.tree();
        RunView onboarding = tree.runs().getFirst();
        List<Check> checks = new ArrayList<>();
        checks.add(new Check("the onboarding rolled back", run.outcome() == Outcome.ROLLED_BACK));
        RunView access = find(tree, "access-provisioning");
        checks.add(new Check("access provisioning failed because the support tier does not exist",
                access != null && access.status() == RunStatus.ROLLED_BACK && access.failure() != null
                        && access.failure().message().contains("'platinum' does not exist")));
        checks.add(new Check("the contract was never created", step(onboarding, "create-contract") == null));
        checks.addAll(undoneChildrenFirst(tree, customer));
        String summary = run.outcome() + ": access provisioning failed (" + firstCause(access)
                + "); " + compensations(tree) + " compensations ran, children first; no contract, no welcome"
                + " e-mail, no rows left";
        return result(2, "access provisioning fails", run, summary, checks);
    }

    /** 3: the support portal times out once; the child-failure handler asks again and the onboarding completes. */
    public Result flakyPortalIsRetried() throws Exception {
        NewCustomer customer = customer("edsger", "Edsger Dijkstra", "premium");
        world.portalTimesOut(customer.accountId(), 1);
        Run run = launch(customer);
        Hierarchy tree = run.tree();
        List<Check> checks = new ArrayList<>();
        checks.add(new Check("the onboarding committed", run.outcome() == Outcome.COMMITTED));
        List<RunView> portal = all(tree).filter(r -> r.saga().equals("support-portal")).toList();
        checks.add(new Check("the support portal was asked twice: the first rolled back, the second committed",
                portal.stream().map(RunView::status).toList()
                        .equals(List.of(RunStatus.ROLLED_BACK, RunStatus.COMMITTED))));
        RunView access = find(tree, "access-provisioning");
        checks.add(new Check("access provisioning's child-failure handler launched the retry",
                access != null && access.steps().stream()
                        .anyMatch(s -> s.kind() == StepView.Kind.CHILD_FAILURE_HANDLER && s.launched().size() == 1)));
        Map<String, Integer> rows = Onboarding.rowsOf(data, customer.accountId());
        checks.add(new Check("every service wrote its rows once, the welcome e-mail included " + rows,
                rows.values().stream().allMatch(n -> n == 1)));
        String summary = run.outcome() + " in " + took(tree) + ": the support portal timed out once, access "
                + "provisioning's child-failure handler asked again, and the onboarding completed";
        return result(3, "a flaky step is retried", run, summary, checks);
    }

    /**
     * 4: the customer is promised an answer within three seconds (a happy-path deadline in the launch's context,
     * inherited by every run of the onboarding); the ERP is slow, billing's invoicing step notices the deadline
     * passed, gives up, and everything rolls back.
     */
    public Result deadlineIsMissed() throws Exception {
        NewCustomer customer = customer("alan", "Alan Turing", "basic");
        Hold erp = world.erpHangs(customer.accountId());
        progress.restart();
        String source = "onboarding web form (answers within 3 s)";
        CooperationContext context = CooperationContext.of(Deadlines.HAPPY_PATH,
                Deadline.at(client.now().plusSeconds(3), source));
        MessageId id = client.launch(Onboarding.ONBOARDING_REQUESTED, customer, context);
        Outcome outcome;
        try {
            outcome = client.awaitCompletion(id, WAIT);
        } finally {
            erp.release();
        }
        Run run = new Run(id, outcome, client.tree(id));
        Hierarchy tree = run.tree();
        List<Check> checks = new ArrayList<>();
        checks.add(new Check("the onboarding rolled back", outcome == Outcome.ROLLED_BACK));
        RunView invoicing = find(tree, "invoicing");
        checks.add(new Check("billing's invoicing step, waiting for the ERP, gave up when the deadline passed",
                invoicing != null && invoicing.status() == RunStatus.ROLLED_BACK && invoicing.failure() != null
                        && mentions(invoicing.failure(), HappyPathDeadlineMissedException.TYPE,
                                m -> m.contains(source))));
        RunView onboarding = tree.runs().getFirst();
        checks.add(new Check("the onboarding's failure names the missed deadline",
                onboarding.failure() != null && mentions(onboarding.failure(), HappyPathDeadlineMissedException.TYPE,
                        m -> m.contains(source))));
        checks.addAll(undoneChildrenFirst(tree, customer));
        String summary = outcome + ": the web form's 3 s deadline passed while billing waited for the ERP; the "
                + "waiting step gave up, " + compensations(tree) + " compensations ran, children first";
        return result(4, "a deadline is missed", run, summary, checks);
    }

    /**
     * 6: an enterprise contract waits for a manager's approval, an external task; the manager approves it (here
     * through the client, as the dashboard, {@code coop complete} or the approval e-mail's HTTP endpoint would), and
     * the onboarding goes on: the welcome e-mail waits for the approval like for any child.
     */
    public Result managerApproves() throws Exception {
        NewCustomer customer = customer("grace", "Grace Hopper", Onboarding.APPROVED_TIER);
        progress.restart();
        MessageId id = client.launch(Onboarding.ONBOARDING_REQUESTED, customer,
                dev.coop.LaunchOptions.none().businessKey("customer/" + customer.accountId()));
        String key = Onboarding.approvalKey(customer.accountId());
        dev.coop.test.Await.until("the approval task is open", WAIT, () -> client.externalTask(key).isPresent());
        java.time.Instant asked = java.time.Instant.now();
        dev.coop.TaskOutcome approved = client.complete(key, new Onboarding.Approval("katherine", true),
                "manager:katherine");
        Outcome outcome = client.awaitCompletion(id, WAIT);
        Run run = new Run(id, outcome, client.tree(id));
        List<Check> checks = new ArrayList<>();
        checks.add(new Check("the onboarding committed", outcome == Outcome.COMMITTED));
        checks.add(new Check("the manager's approval settled the task", approved == dev.coop.TaskOutcome.SETTLED
                && client.externalTask(key).orElseThrow().state() == dev.coop.TaskState.COMPLETED));
        StepView welcome = step(run.tree().runs().getFirst(), "send-welcome-email");
        checks.add(new Check("the welcome e-mail went out after the approval",
                welcome != null && !start(welcome).toInstant().isBefore(asked)));
        checks.add(new Check("the onboarding is found by its business key",
                client.runs(dev.coop.inspect.RunQuery.newest().businessKey("customer/" + customer.accountId()))
                        .size() == 1));
        String summary = outcome + ": the enterprise contract waited for a manager's approval (external task " + key
                + "); the welcome e-mail went out after it";
        return result(6, "a manager approves", run, summary, checks);
    }

    /**
     * 7: the approval never comes: the customer was promised an answer within three seconds (a happy-path deadline),
     * the deadline passes while the onboarding waits for the manager, the task times out and everything rolls back.
     */
    public Result approvalNeverComes() throws Exception {
        NewCustomer customer = customer("dorothy", "Dorothy Vaughan", Onboarding.APPROVED_TIER);
        progress.restart();
        String source = "sales desk (answers within 3 s)";
        MessageId id = client.launch(Onboarding.ONBOARDING_REQUESTED, customer, CooperationContext.of(
                Deadlines.HAPPY_PATH, Deadline.at(client.now().plusSeconds(3), source)));
        Outcome outcome = client.awaitCompletion(id, WAIT);
        Run run = new Run(id, outcome, client.tree(id));
        String key = Onboarding.approvalKey(customer.accountId());
        List<Check> checks = new ArrayList<>();
        checks.add(new Check("the onboarding rolled back", outcome == Outcome.ROLLED_BACK));
        checks.add(new Check("the approval task timed out", client.externalTask(key)
                .map(t -> t.state() == dev.coop.TaskState.TIMED_OUT).orElse(false)));
        RunView onboarding = run.tree().runs().getFirst();
        checks.add(new Check("the onboarding's failure names the missed deadline",
                onboarding.failure() != null && mentions(onboarding.failure(), HappyPathDeadlineMissedException.TYPE,
                        m -> m.contains(source))));
        checks.addAll(undoneChildrenFirst(run.tree(), customer));
        String summary = outcome + ": nobody approved within the 3 s deadline; the approval task timed out and "
                + compensations(run.tree()) + " compensations ran, children first";
        return result(7, "the approval never comes", run, summary, checks);
    }

    /** 5: an operator cancels an onboarding while billing waits for the ERP; everything rolls back. */
    public Result operatorCancels() throws Exception {
        NewCustomer customer = customer("barbara", "Barbara Liskov", "basic");
        Hold erp = world.erpHangs(customer.accountId());
        progress.restart();
        MessageId id = client.launch(Onboarding.ONBOARDING_REQUESTED, customer);
        CancelResult cancelled;
        Outcome outcome;
        try {
            if (!erp.awaitArrival(WAIT)) {
                throw new IllegalStateException("The invoicing step did not reach the ERP within " + WAIT);
            }
            cancelled = client.cancel(id, "The customer withdrew during onboarding");
            progress.step("operator-client", "operator", "cancel", "cancelled onboarding " + id + ": " + cancelled);
            outcome = client.awaitCompletion(id, WAIT);
        } finally {
            erp.release();
        }
        Run run = new Run(id, outcome, client.tree(id));
        Hierarchy tree = run.tree();
        List<Check> checks = new ArrayList<>();
        checks.add(new Check("the cancellation was recorded", cancelled == CancelResult.REQUESTED));
        checks.add(new Check("the onboarding rolled back", outcome == Outcome.ROLLED_BACK));
        RunView onboarding = tree.runs().getFirst();
        checks.add(new Check("it rolled back because the operator cancelled it",
                onboarding.failure() != null && mentions(onboarding.failure(), CancellationRequestedException.TYPE,
                        "The customer withdrew during onboarding")));
        RunView invoicing = find(tree, "invoicing");
        checks.add(new Check("the waiting invoicing step gave up and rolled back",
                invoicing != null && invoicing.status() == RunStatus.ROLLED_BACK));
        checks.addAll(undoneChildrenFirst(tree, customer));
        String summary = outcome + ": an operator cancelled while billing waited for the ERP; the waiting step gave "
                + "up, " + compensations(tree) + " compensations ran, children first; no welcome e-mail";
        return result(5, "an operator cancels", run, summary, checks);
    }

    /**
     * An onboarding held midway: billing's invoicing step waits for the ERP (checking whether it should give up)
     * until {@link Held#close()}, or until {@code patience} ran out (then it fails, and the onboarding rolls back).
     * For operators' tools to act on a running hierarchy.
     */
    public Held launchHeld(Duration patience) throws InterruptedException {
        NewCustomer customer = customer("barbara", "Barbara Liskov", "basic");
        Hold erp = world.erpHangs(customer.accountId(), patience);
        MessageId id = client.launch(Onboarding.ONBOARDING_REQUESTED, customer);
        if (!erp.awaitArrival(WAIT)) {
            erp.release();
            throw new IllegalStateException("The invoicing step did not reach the ERP within " + WAIT);
        }
        return new Held(id, erp);
    }

    /** A running onboarding and the ERP call it waits for. */
    public record Held(MessageId id, Hold erp) implements AutoCloseable {
        /** Lets the ERP answer: the onboarding goes on (unless it was cancelled). */
        @Override
        public void close() {
            erp.release();
        }
    }

    /**
     * An onboarding that asks for a support tier that does not exist, named by the caller (markup, say, to check
     * that tools show failure messages as text); waits until it rolled back.
     */
    public MessageId launchWithUnknownTier(String tier) {
        NewCustomer customer = customer("mallory", "Mallory Mallet", tier);
        MessageId id = client.launch(Onboarding.ONBOARDING_REQUESTED, customer);
        client.awaitCompletion(id, WAIT);
        return id;
    }

    @Override
    public void close() {
        for (int i = engines.size() - 1; i >= 0; i--) {
            engines.get(i).close();
        }
        pools.forEach(HikariDataSource::close);
    }

    // ---- helpers

    private record Run(MessageId id, Outcome outcome, Hierarchy tree) {
    }

    private NewCustomer customer(String first, String name, String tier) {
        String account = first + "-" + tag + "-" + customers.incrementAndGet();
        return new NewCustomer(account, name, "invoices@" + name.substring(name.indexOf(' ') + 1).toLowerCase()
                + ".example", tier);
    }

    private Run launch(NewCustomer customer) {
        progress.restart();
        MessageId id = client.launch(Onboarding.ONBOARDING_REQUESTED, customer);
        Outcome outcome = client.awaitCompletion(id, WAIT);
        return new Run(id, outcome, client.tree(id));
    }

    private static Result result(int number, String title, Run run, String summary, List<Check> checks) {
        boolean ok = checks.stream().allMatch(Check::passed);
        return new Result(number, title, ok ? Verdict.AS_DESIGNED : Verdict.NOT_AS_DESIGNED, run.outcome(), summary,
                run.tree(), List.copyOf(checks));
    }

    private static Stream<RunView> all(Hierarchy tree) {
        return tree.runs().stream().flatMap(r -> r.flatten().stream());
    }

    private static RunView find(Hierarchy tree, String saga) {
        return all(tree).filter(r -> r.saga().equals(saga)).findFirst().orElse(null);
    }

    private static StepView step(RunView run, String name) {
        return run.steps().stream().filter(s -> s.kind() == StepView.Kind.STEP && s.name().equals(name))
                .findFirst().orElse(null);
    }

    /** The runs caused by the (first) step of that name. */
    private static List<RunView> childrenOf(RunView run, String stepName) {
        StepView step = step(run, stepName);
        if (step == null) {
            return List.of();
        }
        return run.children().stream().filter(c -> step.launched().contains(c.messageId())).toList();
    }

    private static OffsetDateTime latest(List<RunView> runs) {
        return runs.stream().map(RunView::finishedAt).filter(Objects::nonNull).max(Comparator.naturalOrder())
                .orElse(null);
    }

    private static OffsetDateTime start(StepView step) {
        return step.startedAt() != null ? step.startedAt() : step.endedAt();
    }

    /**
     * The rule, checked on the tree: the step after one that launched messages started only after every run of those
     * messages had finished.
     */
    static List<String> barrierViolations(Hierarchy tree) {
        List<String> violations = new ArrayList<>();
        all(tree).forEach(run -> {
            List<StepView> steps = run.steps();
            for (int i = 0; i + 1 < steps.size(); i++) {
                StepView step = steps.get(i);
                StepView next = steps.get(i + 1);
                for (RunView child : run.children()) {
                    if (step.launched().contains(child.messageId()) && step.kind() != StepView.Kind.ROLLBACK_CHILDREN
                            && (child.finishedAt() == null || start(next).isBefore(child.finishedAt()))) {
                        violations.add(run.saga() + "/" + next.name() + " started before " + child.saga()
                                + " finished");
                    }
                }
            }
        });
        return violations;
    }

    /** Children first: a step's compensation started only after the runs it caused had finished rolling back. */
    static List<String> compensationOrderViolations(Hierarchy tree) {
        List<String> violations = new ArrayList<>();
        all(tree).forEach(run -> {
            for (StepView compensation : run.steps()) {
                if (compensation.kind() != StepView.Kind.COMPENSATION) {
                    continue;
                }
                String original = compensation.name().substring("Rollback of ".length());
                Set<MessageId> launched = new HashSet<>();
                run.steps().stream().filter(s -> s.name().equals(original)).forEach(s -> launched.addAll(s.launched()));
                for (RunView child : run.children()) {
                    if (launched.contains(child.messageId()) && child.rollingBack()
                            && (child.finishedAt() == null || start(compensation).isBefore(child.finishedAt()))) {
                        violations.add(run.saga() + " compensated " + original + " before " + child.saga()
                                + " finished rolling back");
                    }
                }
            }
        });
        return violations;
    }

    private static String details(List<String> violations) {
        return violations.isEmpty() ? "" : ": " + violations;
    }

    private static long compensations(Hierarchy tree) {
        return all(tree).flatMap(r -> r.steps().stream()).filter(s -> s.kind() == StepView.Kind.COMPENSATION)
                .count();
    }

    private static boolean mentions(Failure failure, String type, String message) {
        return mentions(failure, type, message::equals);
    }

    /** Whether the failure or one of its causes is of {@code type} with a message that {@code matches}. */
    private static boolean mentions(Failure failure, String type, java.util.function.Predicate<String> matches) {
        if (failure.type().equals(type) && matches.test(failure.message())) {
            return true;
        }
        return failure.causes().stream().anyMatch(c -> mentions(c, type, matches));
    }

    /** The checks of a hierarchy that rolled back: compensated children first, nothing left in any service. */
    private List<Check> undoneChildrenFirst(Hierarchy tree, NewCustomer customer) throws SQLException {
        List<String> order = compensationOrderViolations(tree);
        Map<String, Integer> rows = Onboarding.rowsOf(data, customer.accountId());
        return List.of(
                new Check("every run was compensated after the runs it caused" + details(order), order.isEmpty()),
                new Check("nothing is left in any service and no welcome e-mail went out " + rows,
                        rows.values().stream().allMatch(n -> n == 0)));
    }

    private static String firstCause(RunView run) {
        if (run == null || run.failure() == null) {
            return "no failure recorded";
        }
        Failure f = run.failure();
        while (!f.causes().isEmpty()) {
            f = f.causes().getFirst();
        }
        return f.message();
    }

    private static String took(Hierarchy tree) {
        OffsetDateTime end = latest(tree.runs().stream().flatMap(r -> r.flatten().stream()).toList());
        return end == null ? "?" : Duration.between(tree.launchedAt(), end).toMillis() + " ms";
    }

    private static String gap(OffsetDateTime from, StepView step) {
        if (from == null || step == null) {
            return "?";
        }
        return Duration.between(from, start(step)).toNanos() / 100_000 / 10.0 + " ms";
    }

    /** The checks of a result that failed, for messages. */
    public static String failedChecks(Result result) {
        return result.checks().stream().filter(c -> !c.passed()).map(Check::what)
                .collect(java.util.stream.Collectors.joining("; "));
    }
}
