package dev.coop.examples;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.inspect.Outcome;
import dev.coop.RunStatus;
import dev.coop.inspect.RunView;
import dev.coop.examples.Scenarios.Result;
import dev.coop.examples.Scenarios.Verdict;
import dev.coop.render.RenderOptions;
import dev.coop.render.Renderers;
import dev.coop.test.CoopDatabase;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The demo's scenarios, run as tests: their outcomes and checks, not their timing. */
class ScenariosTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    /** What the services print as they go, for every test of the class. */
    static final ByteArrayOutputStream progress = new ByteArrayOutputStream();
    static Scenarios scenarios;

    @BeforeAll
    static void startServices() throws Exception {
        scenarios = Scenarios.start((service, size) -> db.server().dataSource(db.databaseName(), size, service),
                Progress.printingTo(new PrintStream(progress, true, StandardCharsets.UTF_8)));
    }

    @AfterAll
    static void stopServices() {
        if (scenarios != null) {
            scenarios.close();
        }
    }

    @Test
    void everything_succeeds_and_nothing_runs_early() throws Exception {
        Result result = scenarios.everythingSucceeds();
        assertAsDesigned(result, Outcome.COMMITTED);
        assertThat(result.tree().runs().getFirst().flatten()).extracting(RunView::saga).containsExactlyInAnyOrder(
                "onboarding", "crm", "billing-account", "access-provisioning", "support-portal", "invoicing");
        assertThat(result.checks()).extracting(Scenarios.Check::what)
                .contains("the contract was created after crm, billing and access provisioning finished",
                        "the welcome e-mail went out after everything else had finished");
        TreePicture.check(result.tree(), "docs/images/demo-tree.svg"); // the picture of README and the guide
    }

    @Test
    void access_provisioning_fails_and_everything_is_compensated_children_first() throws Exception {
        Result result = scenarios.accessProvisioningFails();
        assertAsDesigned(result, Outcome.ROLLED_BACK);
        assertThat(result.tree().runs().getFirst().flatten()).allSatisfy(
                r -> assertThat(r.status()).as(r.saga()).isEqualTo(RunStatus.ROLLED_BACK));
        String text = Renderers.text().render(result.tree());
        assertThat(text).contains("IllegalArgumentException: Support tier 'platinum' does not exist  (in "
                + "access-provisioning[access-").contains("Distributed stack trace")
                .doesNotContain("send-welcome-email");
    }

    @Test
    void a_child_failure_handler_retries_the_flaky_portal_and_the_onboarding_completes() throws Exception {
        Result result = scenarios.flakyPortalIsRetried();
        assertAsDesigned(result, Outcome.COMMITTED);
        assertThat(Renderers.text().render(result.tree())).contains("SocketTimeoutException",
                "request-portal-user  child-failure handler");
    }

    @Test
    void a_missed_deadline_makes_the_waiting_step_give_up_and_everything_roll_back() throws Exception {
        Result result = scenarios.deadlineIsMissed();
        assertAsDesigned(result, Outcome.ROLLED_BACK);
        assertThat(Renderers.text().render(result.tree())).contains("DeadlineMissedException: Happy-path deadline")
                .contains("set by onboarding web form (answers within 3 s)");
    }

    @Test
    void an_operator_cancels_midway_and_the_onboarding_rolls_back() throws Exception {
        Result result = scenarios.operatorCancels();
        assertAsDesigned(result, Outcome.ROLLED_BACK);
        assertThat(Renderers.text().render(result.tree()))
                .contains("CancellationRequestedException: The customer withdrew during onboarding  (in coop-client)");
    }

    @Test
    void a_manager_approves_an_external_task_and_the_onboarding_goes_on() throws Exception {
        assertAsDesigned(scenarios.managerApproves(), Outcome.COMMITTED);
    }

    @Test
    void the_approval_never_comes_and_the_deadline_rolls_everything_back() throws Exception {
        assertAsDesigned(scenarios.approvalNeverComes(), Outcome.ROLLED_BACK);
    }

    @Test
    void the_demo_prints_progress_trees_and_a_summary_and_succeeds() throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        boolean ok;
        try (PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
            ok = Demo.run(out, RenderOptions.ascii(), scenarios, "a test database");
        }
        String output = bytes.toString(StandardCharsets.UTF_8);
        assertThat(ok).as(output).isTrue();
        assertThat(output).contains("`- onboarding on onboarding-requested", "4  a deadline is missed",
                "7 of 7 scenarios ended as designed;");
        assertThat(progress.toString(StandardCharsets.UTF_8)).contains("accounts  onboarding / create-account",
                "operator  operator / cancel");
        assertThat(output.chars().allMatch(c -> c < 128)).as("ASCII only").isTrue();
    }

    private static void assertAsDesigned(Result result, Outcome outcome) {
        String tree = Renderers.text().render(result.tree());
        assertThat(result.outcome()).as(tree).isEqualTo(outcome);
        assertThat(result.verdict()).as("failed checks: " + Scenarios.failedChecks(result) + "\n" + tree)
                .isEqualTo(Verdict.AS_DESIGNED);
    }
}
