package dev.coop.examples;

import dev.coop.dashboard.DashboardServer;
import dev.coop.examples.Scenarios.Check;
import dev.coop.examples.Scenarios.Result;
import dev.coop.render.RenderOptions;
import dev.coop.render.Renderers;
import dev.coop.render.TextRenderer;
import dev.coop.test.CoopPostgres;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;

/**
 * The onboarding demo (seven scenarios): five services (accounts, crm, billing, access, portal), each its own engine with its own
 * connection pool, sharing one PostgreSQL database (embedded unless {@code COOP_JDBC_URL} is set). Runs the scenarios
 * of {@link Scenarios}, printing what each service does as it happens, then each onboarding's cooperation tree and
 * a one-line summary. Exits 0 when every scenario ended as designed, 1 otherwise.
 *
 * <p>
 * Run it with {@code mvn -q -Pdemo verify -DskipTests}; add {@code -Ddashboard=8080} to look at what happened in the
 * dashboard afterwards (it serves until Ctrl-C).
 */
public final class Demo {
    private Demo() {
    }

    public static void main(String[] args) {
        PrintStream out = System.out;
        RenderOptions options = Renderers.terminalOptions();
        boolean ok;
        try {
            ok = run(out, options);
        } catch (Exception e) {
            out.flush();
            System.err.println("The demo could not run: " + e);
            e.printStackTrace();
            ok = false;
        }
        out.flush();
        System.exit(ok ? 0 : 1);
    }

    /** Counted down when {@link #run(PrintStream, RenderOptions)} closed its engines and dropped its database. */
    private static final CountDownLatch FINISHED = new CountDownLatch(1);

    /** In the JVM's shutdown: waits (a while) until the demo closed everything, while the database still runs. */
    private static void awaitFinished() {
        try {
            if (!FINISHED.await(60, java.util.concurrent.TimeUnit.SECONDS)) {
                System.err.println("The demo did not finish closing within 60 s; stopping anyway");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Runs every scenario on a fresh database of the shared server; true when all ended as designed. */
    static boolean run(PrintStream out, RenderOptions options) throws Exception {
        try {
            return runOnce(out, options);
        } finally {
            FINISHED.countDown();
        }
    }

    private static boolean runOnce(PrintStream out, RenderOptions options) throws Exception {
        CoopPostgres server = CoopPostgres.shared();
        String database = server.createDatabase("coop_demo");
        try (Scenarios scenarios = Scenarios.start((service, size) -> server.dataSource(database, size, service),
                Progress.printingTo(out))) {
            boolean ok = run(out, options, scenarios, "database " + database + " on " + server);
            String port = System.getProperty("dashboard", "");
            if (!port.isBlank()) {
                serveDashboard(out, scenarios, port.strip());
            }
            return ok;
        } finally {
            try {
                server.dropDatabase(database);
            } catch (RuntimeException e) {
                System.err.println("Could not drop the demo database " + database + ": " + e.getMessage());
            }
        }
    }

    /**
     * Serves the dashboard over the demo's database until Ctrl-C, with one more onboarding left running (billing
     * waits for the ERP) for the reader to cancel from the page.
     */
    static void serveDashboard(PrintStream out, Scenarios scenarios, String port) throws Exception {
        DashboardServer.Builder builder = DashboardServer.builder(scenarios.client()).port(Integer.parseInt(port))
                .fromEnvironment(System.getenv());
        String token = builder.ensureAccess();
        try (DashboardServer dashboard = builder.start();
                Scenarios.Held held = scenarios.launchHeld(Duration.ofHours(1))) {
            out.println();
            out.println(DashboardServer.started(dashboard, token));
            out.println("An onboarding is left running (billing waits for the ERP for up to an hour): cancel it from"
                    + " its page, "
                    + dashboard.uri() + "#/h/" + held.id());
            out.println("Press Ctrl-C to stop.");
            out.flush();
            CountDownLatch stopped = new CountDownLatch(1);
            CoopPostgres.beforeStopping(() -> { // SIGTERM, Ctrl-C: the engines stop before the embedded PostgreSQL
                stopped.countDown();
                awaitFinished();
            });
            stopped.await();
        }
    }

    /** Runs every scenario with services already started; true when all ended as designed. */
    static boolean run(PrintStream out, RenderOptions options, Scenarios scenarios, String where) throws Exception {
        long start = System.nanoTime();
        TextRenderer trees = new TextRenderer(options);
        Glyphs g = new Glyphs(options);
        List<Result> results = new ArrayList<>();
        out.println(g.bold("Coop demo: onboarding across " + scenarios.services().size() + " services ("
                + String.join(", ", scenarios.services()) + "), each its own engine and connection pool, sharing "
                + where));
        out.println("Each line below is printed by a step (or compensation) as it runs, with the time since the"
                + " onboarding was launched.");
        results.add(scenario(out, g, trees, 1, "everything succeeds", scenarios::everythingSucceeds));
        results.add(scenario(out, g, trees, 2, "access provisioning fails: cascading compensation, children first",
                scenarios::accessProvisioningFails));
        results.add(scenario(out, g, trees, 3, "a child-failure handler retries a flaky step",
                scenarios::flakyPortalIsRetried));
        results.add(scenario(out, g, trees, 4, "a deadline is missed", scenarios::deadlineIsMissed));
        results.add(scenario(out, g, trees, 5, "an operator cancels a long onboarding midway",
                scenarios::operatorCancels));
        results.add(scenario(out, g, trees, 6, "a manager approves an enterprise contract (an external task)",
                scenarios::managerApproves));
        results.add(scenario(out, g, trees, 7, "the approval never comes: the deadline rolls everything back",
                scenarios::approvalNeverComes));
        out.println();
        out.println(g.rule("Summary"));
        for (Result r : results) {
            out.printf("  %s %d  %-26s %s%n", r.asDesigned() ? g.ok() : g.fail(), r.number(), r.title(),
                    r.summary());
        }
        long designed = results.stream().filter(Result::asDesigned).count();
        out.println();
        long skipped = results.stream().filter(r -> r.verdict() == Scenarios.Verdict.SKIPPED).count();
        out.printf("%d of %d scenarios ended as designed%s; they took %.1f s.%n", designed, results.size(),
                skipped == 0 ? "" : " (" + skipped + " skipped)", (System.nanoTime() - start) / 1e9);
        return designed == results.size();
    }

    private static Result scenario(PrintStream out, Glyphs g, TextRenderer trees, int number, String title,
            Callable<Result> scenario) throws Exception {
        out.println();
        out.println(g.rule("Scenario " + number + ": " + title));
        Result result = scenario.call();
        if (result.tree() != null) {
            out.println();
            out.print(trees.render(result.tree()));
        }
        out.println();
        for (Check check : result.checks()) {
            out.println("  " + (check.passed() ? g.ok() : g.fail()) + " " + check.what());
        }
        out.println((result.asDesigned() ? g.ok() : g.fail()) + " Scenario " + number + " "
                + (result.verdict() == Scenarios.Verdict.NOT_AS_DESIGNED ? "did NOT end as designed" : "as designed")
                + ": " + result.summary());
        return result;
    }

    /** The few symbols and colours the demo's own lines use, following the tree renderer's options. */
    private record Glyphs(RenderOptions options) {
        String ok() {
            return color("32", options.unicode() ? "✓" : "+");
        }

        String fail() {
            return color("31", options.unicode() ? "✗" : "x");
        }

        String bold(String s) {
            return color("1", s);
        }

        String rule(String title) {
            String line = options.unicode() ? "━━" : "==";
            return bold(line + " " + title + " " + line);
        }

        private String color(String code, String s) {
            return options.colors() ? "\u001b[" + code + "m" + s + "\u001b[0m" : s;
        }
    }
}
