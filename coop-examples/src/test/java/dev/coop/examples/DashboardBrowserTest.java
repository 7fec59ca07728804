package dev.coop.examples;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.CoopClient;
import dev.coop.MessageId;
import dev.coop.dashboard.DashboardServer;
import dev.coop.dashboard.Role;
import dev.coop.examples.Scenarios.Result;
import dev.coop.inspect.AuditEntry;
import dev.coop.inspect.Outcome;
import dev.coop.test.CoopDatabase;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.NoAlertPresentException;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The dashboard in a real browser (headless Chromium), serving the demo's scenarios: what an operator sees, and
 * what the dashboard refuses. One browser for the class; each test logs in as the user it needs.
 */
class DashboardBrowserTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();
    static final Duration WAIT = Duration.ofSeconds(45);
    /** How often a wait looks again: Selenium's default, half a second, is mostly idle time on every wait. */
    static final Duration POLL = Duration.ofMillis(100);
    static final String SCRIPT_TIER = "<script>window.pwned=1</script><img src=x onerror=\"window.pwned=2\">";

    @TempDir
    static Path profile;

    static Scenarios scenarios;
    static DashboardServer dashboard;
    static ChromeDriver browser;
    static MessageId failed;
    static MessageId succeeded;
    static MessageId hostile;

    @BeforeAll
    static void start() throws Exception {
        Chromium.assumeInstalled();
        ByteArrayOutputStream progress = new ByteArrayOutputStream();
        scenarios = Scenarios.start((service, size) -> db.server().dataSource(db.databaseName(), size, service),
                Progress.printingTo(new PrintStream(progress, true, StandardCharsets.UTF_8)));
        succeeded = scenarios.everythingSucceeds().tree().messageId();
        Result rolledBack = scenarios.accessProvisioningFails();
        assertThat(rolledBack.outcome()).isEqualTo(Outcome.ROLLED_BACK);
        failed = rolledBack.tree().messageId();
        hostile = scenarios.launchWithUnknownTier(SCRIPT_TIER);
        dashboard = DashboardServer.builder(scenarios.client()).port(0).mask("invoicingEmail", "*secret*")
                .user("olga", "operator-pass", Role.OPERATOR).user("vic", "viewer-pass", Role.VIEWER).start();
        browser = Chromium.start(profile);
    }

    @AfterAll
    static void stop() {
        if (browser != null) {
            browser.quit();
        }
        if (dashboard != null) {
            dashboard.close();
        }
        if (scenarios != null) {
            scenarios.close();
        }
    }

    @Test
    void the_runs_page_lists_the_demos_runs_with_counts_by_status() throws IOException {
        login("olga", "operator-pass");
        open("#/runs");
        WebElement table = await(By.cssSelector("table.runs tbody tr"));
        String text = browser.findElement(By.cssSelector("table.runs")).getText();
        assertThat(text).contains("onboarding", "access-provisioning", "support-portal", "committed", "rolled back");
        assertThat(browser.findElement(By.cssSelector(".chips")).getText()).contains("committed", "rolled back");
        assertThat(table.isDisplayed()).isTrue();
        assertThat(text).as("full ids, not their first 8 characters")
                .containsPattern("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
        assertThat(browser.findElements(By.cssSelector("table.runs button.copy"))).isNotEmpty();
        screenshot("dashboard-runs.png");

        browser.findElement(By.id("f-saga")).sendKeys("access-provisioning\n");
        waitUntil(() -> browser.findElements(By.cssSelector("table.runs tbody tr")).stream()
                .allMatch(r -> r.getText().contains("access-provisioning")));
    }

    /** The tree's rows of the rollback of step request-portal-user whose text has {@code what}. */
    private long rollbackRows(String what) {
        return (Long) browser.executeScript("""
                return [...document.querySelectorAll('#tree tr')].filter(r =>
                    r.textContent.includes('Rollback of request-portal-user') && r.textContent.includes(arguments[0])
                    && (arguments[0] !== 'compensation' || !r.textContent.includes('child scopes'))).length""", what);
    }

    @Test
    void the_failed_onboarding_shows_its_tree_timeline_and_stack_trace() throws IOException {
        login("olga", "operator-pass");
        open("#/h/" + failed);
        WebElement trace = await(By.id("stack-trace"));
        assertThat(trace.getText()).contains("ChildRolledBackException", "caused by", "IllegalArgumentException",
                "Support tier 'platinum' does not exist", "access-provisioning[");
        String tree = browser.findElement(By.id("tree")).getText();
        assertThat(tree).contains("onboarding", "access-provisioning", "support-portal", "crm", "create-account",
                "compensation");
        assertThat(browser.findElements(By.cssSelector("#timeline .tl-seg.k-STEP"))).hasSizeGreaterThan(5);
        assertThat(browser.findElements(By.cssSelector("#timeline .tl-seg.k-COMPENSATION"))).isNotEmpty();
        assertThat(browser.findElements(By.cssSelector("#timeline .tl-wait"))).isNotEmpty();
        assertThat(browser.findElement(By.id("compensations")).getText()).contains("support-portal",
                "create-portal-user").doesNotContain("request-portal-user");
        // request-portal-user declares no compensation: the rollback of its children has a row, no compensation
        Object[] rows = {rollbackRows("child scopes"), rollbackRows("compensation")};
        assertThat(rows).as("rows of 'Rollback of request-portal-user': children, compensation").containsExactly(1L,
                0L);
        assertThat(browser.findElement(By.id("outcome")).getText()).contains("rolled back");
        screenshot("dashboard-hierarchy.png");
        browser.findElement(By.cssSelector("#events > summary")).click();
        assertThat(await(By.cssSelector("#events table")).getText()).contains("ROLLING_BACK", "EMITTED");
        browser.executeScript("document.getElementById('timeline-title').scrollIntoView()");
        screenshot("dashboard-timeline.png");

        open("#/runs"); // by keyboard: '/' jumps to the id box, Enter opens the hierarchy
        await(By.cssSelector("table.runs"));
        browser.findElement(By.tagName("body")).sendKeys("/");
        browser.switchTo().activeElement().sendKeys(failed + "\n");
        waitUntil(() -> browser.getCurrentUrl().endsWith("#/h/" + failed));
        assertThat(await(By.id("stack-trace")).getText()).contains("Support tier 'platinum' does not exist");
    }

    @Test
    void the_counts_page_shows_launched_and_finished_runs_per_saga_over_time() throws IOException {
        login("vic", "viewer-pass");
        open("#/counts");
        WebElement onboarding = await(By.cssSelector("table#counts tr[data-saga='onboarding']"));
        List<String> cells = onboarding.findElements(By.tagName("td")).stream().map(WebElement::getText).toList();
        assertThat(cells.get(1)).as("launched").isNotEqualTo("0");
        assertThat(Long.parseLong(cells.get(2)) + Long.parseLong(cells.get(3))).as("committed + rolled back")
                .isPositive();
        assertThat(onboarding.findElements(By.cssSelector(".cchart .cbar"))).as("bars in the chart").isNotEmpty();
        assertThat(browser.findElement(By.id("counts-fitted")).getText()).contains("fits the activity");
        assertThat(onboarding.findElements(By.cssSelector(".cchart .ccol"))).as("a window fitted to minutes of"
                + " activity, not 180 columns of which one has bars").hasSizeLessThanOrEqualTo(60);
        assertThat(browser.findElement(By.id("counts-both")).getText()).contains("counted twice");
        assertThat(browser.findElement(By.cssSelector("table#counts")).getText()).contains("access-provisioning",
                "support-portal");
        screenshot("dashboard-counts.png");

        browser.findElement(By.xpath("//button[contains(., 'last 24h')]")).click();
        waitUntil(() -> browser.getCurrentUrl().endsWith("minutes=1440")
                && !browser.findElements(By.cssSelector("table#counts tr[data-saga='onboarding']")).isEmpty());
        waitUntil(() -> { // the page may still replace the table it rendered before: find the link again then
            browser.findElement(By.cssSelector("table#counts tr[data-saga='onboarding'] a")).click();
            return true;
        });
        waitUntil(() -> browser.getCurrentUrl().contains("#/runs?saga=onboarding"));
    }

    @Test
    void a_failure_message_with_markup_is_shown_as_text() {
        login("olga", "operator-pass");
        open("#/h/" + hostile);
        WebElement trace = await(By.id("stack-trace"));
        assertThat(trace.getText()).contains("Support tier '" + SCRIPT_TIER + "' does not exist");
        assertThat(browser.findElements(By.cssSelector("main script, main img"))).isEmpty();
        assertThat(browser.executeScript("return window.pwned === undefined")).isEqualTo(true);
        assertNoAlert();
    }

    @Test
    void a_cancel_from_the_page_rolls_a_running_hierarchy_back_and_is_audited() throws Exception {
        login("olga", "operator-pass");
        try (Scenarios.Held held = scenarios.launchHeld(WAIT)) {
            open("#/h/" + held.id());
            await(By.cssSelector("#outcome .live"));
            await(By.id("cancel")).click();
            WebElement dialog = await(By.id("confirm"));
            assertThat(dialog.getText()).contains("give up", "compensations run", "billing-account");
            WebElement ok = browser.findElement(By.id("confirm-ok"));
            assertThat(ok.isEnabled()).as("no reason yet").isFalse();
            browser.findElement(By.id("confirm-reason")).sendKeys("The customer withdrew (browser test)");
            screenshot("dashboard-cancel.png");
            ok.click();
            waitUntil(() -> browser.findElement(By.id("outcome")).getText().contains("rolled back"));
            assertThat(scenarios.client().awaitCompletion(held.id(), WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            WebElement audit = await(By.cssSelector("table#audit"));
            assertThat(audit.getText()).contains("olga", "cancel", "The customer withdrew (browser test)",
                    "REQUESTED");
            assertThat(browser.findElement(By.id("stack-trace")).getText()).contains("CancellationRequested",
                    "The customer withdrew (browser test)");
            List<AuditEntry> entries = scenarios.client().audit(held.id());
            assertThat(entries).extracting(AuditEntry::actor).containsExactly("olga");
        }
    }

    @Test
    void a_running_step_shows_live_with_its_engine_attempt_and_a_growing_bar() throws Exception {
        login("vic", "viewer-pass");
        try (Scenarios.Held held = scenarios.launchHeld(WAIT)) {
            open("#/h/" + held.id());
            WebElement row = await(By.cssSelector("tr.running-step"));
            assertThat(row.getText()).contains("running", "schedule-invoices", "attempt 1", "last sign of life")
                    .containsPattern("[a-z-]+-[0-9a-f]{8}"); // the engine's id
            assertThat(browser.findElement(By.id("tree")).getText()).contains("▶ schedule-invoices on ");
            assertThat(browser.findElements(By.cssSelector("#timeline .tl-lane .tl-seg.k-running"))).hasSize(1);
            String soFar = browser.findElement(By.cssSelector("tr.running-step td:nth-child(5)")).getText();
            waitUntil(() -> !browser.findElement(By.cssSelector("tr.running-step td:nth-child(5)")).getText()
                    .equals(soFar)); // the page refreshes itself while the step runs
            browser.executeScript("document.querySelector('tr.running-step').scrollIntoView({block: 'center'})");
            screenshot("dashboard-running.png");

            open("#/runs"); // the runs list says running too, with the step, not runnable
            waitUntil(() -> browser.findElements(By.cssSelector("table.runs tbody tr")).stream()
                    .anyMatch(r -> r.getText().contains("running") && r.getText().contains("schedule-invoices")));
        }
    }

    @Test
    void a_step_retried_then_committed_shows_its_failed_attempts_in_the_tree_and_timeline() throws Exception {
        dev.coop.Topic<Flaky> topic = dev.coop.Topic.of("browser-flaky", Flaky.class);
        dev.coop.Saga<Flaky> saga = dev.coop.Saga.on(topic, "browser-flaky-saga")
                .step("charge-card", step -> {
                    if (step.attempt() < 3) {
                        throw new IllegalStateException("the card gateway timed out (attempt " + step.attempt() + ")");
                    }
                    step.setResult(java.util.Map.of("receipt", "r-77", "gatewaySecret", "s3cr3t"));
                })
                .retry(dev.coop.RetryPolicy.attempts(3).initialDelay(Duration.ZERO))
                .build();
        MessageId id;
        try (dev.coop.CoopEngine engine = dev.coop.Coop.engine(db.dataSource()).register(saga).start()) {
            id = engine.client().launch(topic, new Flaky("order-1"));
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
        }
        login("vic", "viewer-pass");
        open("#/h/" + id);
        String tree = await(By.cssSelector("table.steps")).getText();
        assertThat(tree).contains("failed attempt", "charge-card attempt 1", "charge-card attempt 2",
                "the card gateway timed out (attempt 1)", "the card gateway timed out (attempt 2)");
        assertThat(browser.findElements(By.cssSelector("#timeline .tl-lane .tl-seg.k-ATTEMPT_FAILED"))).hasSize(2);
        assertThat(browser.findElements(By.cssSelector("#timeline .tl-lane .tl-seg.k-STEP"))).hasSize(1);
        screenshot("dashboard-attempts.png");

        browser.findElement(By.cssSelector("details.io > summary")).click(); // input and output, masked
        String io = await(By.cssSelector("details.io .io-result pre")).getText();
        assertThat(io).contains("\"receipt\": \"r-77\"", "\"gatewaySecret\": \"***\"").doesNotContain("s3cr3t");
        assertThat(browser.findElement(By.cssSelector("details.io .io-payload pre")).getText())
                .contains("\"order\": \"order-1\"");
    }

    @Test
    void a_payload_is_shown_with_its_masked_fields() throws IOException {
        login("vic", "viewer-pass");
        open("#/h/" + succeeded);
        await(By.cssSelector("details.io > summary")).click();
        String payload = await(By.cssSelector("details.io .io-payload pre")).getText();
        assertThat(payload).contains("\"accountId\"", "\"invoicingEmail\": \"***\"").doesNotContain("@");
        assertThat(browser.findElement(By.cssSelector("details.io .io-result")).getText()).contains("(none)");
        browser.executeScript("document.querySelector('details.io').scrollIntoView({block: 'start'})");
        screenshot("dashboard-payload.png");
    }

    /** The payload of the retried saga above. */
    record Flaky(String order) {
    }

    @Test
    void a_message_is_found_by_its_idempotency_key_from_the_search_box() {
        dev.coop.Topic<Flaky> topic = dev.coop.Topic.of("browser-keyed", Flaky.class);
        dev.coop.Saga<Flaky> saga = dev.coop.Saga.on(topic, "browser-keyed-saga").step("only", step -> {
        }).build();
        MessageId id;
        try (dev.coop.CoopEngine engine = dev.coop.Coop.engine(db.dataSource()).register(saga).start()) {
            id = engine.client().launch(topic, new Flaky("order-9"),
                    dev.coop.LaunchOptions.none().idempotencyKey("order-9/submit"));
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
        }
        login("vic", "viewer-pass");
        open("#/runs");
        await(By.cssSelector("table.runs"));
        browser.findElement(By.tagName("body")).sendKeys("/");
        browser.switchTo().activeElement().sendKeys("order-9/submit\n");
        waitUntil(() -> browser.getCurrentUrl().endsWith("#/h/" + id));
        assertThat(await(By.id("message-id")).getText()).isEqualTo(id.toString());

        MessageId older;
        MessageId newer;
        try (dev.coop.CoopEngine engine = dev.coop.Coop.engine(db.dataSource()).register(saga).start()) {
            older = engine.client().launch(topic, new Flaky("c-1"),
                    dev.coop.LaunchOptions.none().businessKey("customer/1"));
            newer = engine.client().launch(topic, new Flaky("c-2"),
                    dev.coop.LaunchOptions.none().businessKey("customer/1").tags("vip"));
            engine.client().awaitCompletion(newer, WAIT);
        }
        open("#/runs");
        await(By.cssSelector("table.runs"));
        browser.findElement(By.tagName("body")).sendKeys("/");
        browser.switchTo().activeElement().sendKeys("customer/1\n");
        await(By.cssSelector("table.search"));
        waitUntil(() -> { // every match, newest first (found again: the page may still replace what it drew)
            List<String> rows = browser.findElements(By.cssSelector("table.search tbody tr")).stream()
                    .map(WebElement::getText).toList();
            return rows.size() == 2 && rows.get(0).contains(newer.toString()) && rows.get(0).contains("business key")
                    && rows.get(1).contains(older.toString());
        });
        assertThat(browser.findElement(By.id("search-count")).getText()).contains("2 matches");

        open("#/search/no-such-key");
        await(By.cssSelector("main p.muted"));
        waitUntil(() -> browser.findElements(By.cssSelector("main p.muted")).stream() // "Loading…" comes first
                .anyMatch(p -> p.getText().contains("No message has this id, idempotency key, business key or tag")));
    }

    @Test
    void every_parked_run_of_a_saga_is_retried_at_once_with_its_count_confirmed_and_audited() throws Exception {
        dev.coop.Topic<Flaky> topic = dev.coop.Topic.of("browser-parking", Flaky.class);
        java.util.concurrent.atomic.AtomicBoolean broken = new java.util.concurrent.atomic.AtomicBoolean(true);
        dev.coop.Saga<Flaky> saga = dev.coop.Saga.on(topic, "browser-parking-saga")
                .step("call-bank", step -> {
                    if (broken.get()) {
                        throw new IOException("the bank is unreachable");
                    }
                })
                .retry(dev.coop.RetryPolicy.attempts(1).parkWhenExhausted())
                .build();
        try (dev.coop.CoopEngine engine = dev.coop.Coop.engine(db.dataSource()).register(saga).start()) {
            List<MessageId> ids = List.of(engine.client().launch(topic, new Flaky("p-1")),
                    engine.client().launch(topic, new Flaky("p-2")), engine.client().launch(topic, new Flaky("p-3")));
            dev.coop.test.Await.until("three parked runs", WAIT,
                    () -> engine.client().countParked("browser-parking-saga") == 3);
            broken.set(false);
            login("olga", "operator-pass");
            open("#/runs");
            WebElement button = await(
                    By.xpath("//button[contains(., 'Retry all parked runs of browser-parking-saga')]"));
            button.click();
            WebElement dialog = await(By.id("confirm"));
            assertThat(dialog.getText()).contains("Retry all 3 parked runs of browser-parking-saga?",
                    "batches of 1,000 runs", "audit entry");
            browser.findElement(By.id("confirm-reason")).sendKeys("The bank is back (browser test)");
            screenshot("dashboard-bulk-retry.png");
            browser.findElement(By.id("confirm-ok")).click();
            waitUntil(() -> browser.findElement(By.id("flash")).getText().contains("RETRYING 3"));
            for (MessageId id : ids) {
                assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
                assertThat(engine.client().audit(id)).singleElement().satisfies(a -> {
                    assertThat(a.actor()).isEqualTo("olga");
                    assertThat(a.action()).isEqualTo("retry-parked");
                    assertThat(a.reason()).isEqualTo("The bank is back (browser test)");
                });
            }
            open("#/h/" + ids.getFirst());
            assertThat(await(By.cssSelector("table#audit")).getText()).contains("olga", "retry-parked",
                    "The bank is back (browser test)");
        }
    }

    @Test
    void the_filtered_runs_are_cancelled_at_once_with_their_count_confirmed_and_audited() throws Exception {
        dev.coop.Topic<Flaky> topic = dev.coop.Topic.of("browser-select", Flaky.class);
        dev.coop.Saga<Flaky> saga = dev.coop.Saga.on(topic, "browser-select-saga")
                .step("call-partner", step -> {
                    throw new IOException("the partner is gone");
                })
                .retry(dev.coop.RetryPolicy.attempts(1).parkWhenExhausted())
                .build();
        try (dev.coop.CoopEngine engine = dev.coop.Coop.engine(db.dataSource()).register(saga).start()) {
            List<MessageId> ids = List.of(engine.client().launch(topic, new Flaky("s-1")),
                    engine.client().launch(topic, new Flaky("s-2")), engine.client().launch(topic, new Flaky("s-3")));
            dev.coop.test.Await.until("three parked runs", WAIT,
                    () -> engine.client().countParked("browser-select-saga") == 3);
            login("olga", "operator-pass");
            open("#/runs?saga=browser-select-saga&failureType=IOException");
            await(By.id("cancel-selection")).click();
            WebElement dialog = await(By.id("confirm"));
            assertThat(dialog.getText()).contains("Cancel 3 runs (saga browser-select-saga, failureType IOException)?",
                    "batches of 1,000 runs", "audit entry");
            browser.findElement(By.id("confirm-reason")).sendKeys("The partner closed (browser test)");
            screenshot("dashboard-bulk-cancel.png");
            browser.findElement(By.id("confirm-ok")).click();
            waitUntil(() -> browser.findElement(By.id("flash")).getText().contains("REQUESTED for 3 run(s)"));
            for (MessageId id : ids) {
                assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
                assertThat(engine.client().audit(id)).singleElement().satisfies(a -> {
                    assertThat(a.actor()).isEqualTo("olga");
                    assertThat(a.action()).isEqualTo("cancel-selection");
                    assertThat(a.reason()).isEqualTo("The partner closed (browser test)");
                });
            }
            open("#/h/" + ids.getFirst());
            assertThat(await(By.cssSelector("table#audit")).getText()).contains("olga", "cancel-selection",
                    "The partner closed (browser test)");
        }
    }

    @Test
    void an_anonymous_visitor_and_a_viewers_action_are_refused() {
        browser.manage().deleteAllCookies();
        browser.get(dashboard.uri().resolve("api/runs").toString());
        assertThat(browser.getPageSource()).contains("Log in first");
        browser.get(dashboard.uri().toString());
        waitUntil(() -> browser.getCurrentUrl().endsWith("/login"));

        login("vic", "viewer-pass");
        open("#/h/" + succeeded);
        assertThat(await(By.id("actions")).getText()).contains("Read-only");
        assertThat(browser.findElements(By.id("rollback"))).isEmpty();
        Object status = browser.executeAsyncScript("""
                const done = arguments[arguments.length - 1];
                fetch('api/session').then(r => r.json()).then(s => fetch('api/action', {method: 'POST',
                    headers: {'Content-Type': 'application/json', 'X-Coop-Csrf': s.csrf},
                    body: JSON.stringify({action: 'rollback', message: arguments[0], reason: 'not allowed'})}))
                  .then(r => done(r.status), e => done(String(e)));
                """, succeeded.toString());
        assertThat(status).isEqualTo(403L);
        CoopClient client = scenarios.client();
        assertThat(client.audit(succeeded)).as("refused, and the refusal audited").singleElement()
                .satisfies(e -> assertThat(e.outcome()).startsWith("REFUSED").contains("may only read"));
        assertThat(client.statuses(succeeded)).allMatch(s -> s.name().equals("COMMITTED"));
    }

    /** The payload of the task test's saga. */
    record Ask(String id) {
    }

    @Test
    void a_task_is_completed_in_a_dialog_that_checks_its_json_and_repeats_it() throws Exception {
        dev.coop.Topic<Ask> topic = dev.coop.Topic.of("browser-task", Ask.class);
        dev.coop.Saga<Ask> saga = dev.coop.Saga.on(topic, "browser-task-saga")
                .step("ask", step -> step.openTask("approval", step.payload(),
                        dev.coop.TaskOptions.none().key("browser-approval/" + step.payload().id())))
                .build();
        try (dev.coop.CoopEngine engine = dev.coop.Coop.engine(db.dataSource()).register(saga).start()) {
            MessageId id = engine.client().launch(topic, new Ask("1"));
            dev.coop.test.Await.until("the task is open", WAIT,
                    () -> engine.client().externalTask("browser-approval/1").isPresent());
            login("olga", "operator-pass");
            open("#/runs");
            WebElement heading = await(By.id("tasks-title"));
            assertThat(heading.getText()).matches("◷ \\d+ open external tasks? waits? for the outside world");
            if (heading.getText().contains(" 1 open")) {
                assertThat(heading.getText()).contains("1 open external task waits");
            }
            WebElement row = browser.findElements(By.cssSelector("section.tasks tbody tr")).stream()
                    .filter(r -> r.getText().contains("browser-approval/1")).findFirst().orElseThrow();
            row.findElement(By.cssSelector("button.complete-task")).click();
            WebElement result = await(By.id("confirm-result"));
            browser.findElement(By.id("confirm-reason")).sendKeys("The manager said yes (browser test)");
            result.clear();
            result.sendKeys("{\"approved\": tru");
            WebElement check = browser.findElement(By.id("confirm-result-check"));
            assertThat(check.getText()).contains("Not JSON yet");
            assertThat(browser.findElement(By.id("confirm-ok")).isEnabled()).isFalse();
            result.sendKeys("e, \"by\": \"ada\"}");
            assertThat(check.getText()).contains("Sends the result: {\"approved\":true,\"by\":\"ada\"}");
            assertThat(browser.findElement(By.id("confirm-ok")).isEnabled()).isTrue();
            screenshot("dashboard-task-complete.png");
            browser.findElement(By.id("confirm-ok")).click();
            waitUntil(() -> browser.findElement(By.id("flash")).getText().contains("SETTLED"));
            assertThat(engine.client().awaitCompletion(id, WAIT)).isEqualTo(Outcome.COMMITTED);
            dev.coop.inspect.TaskView task = engine.client().externalTask("browser-approval/1").orElseThrow();
            assertThat(task.result()).hasValueSatisfying(r -> assertThat(r).contains("\"approved\"", "\"ada\""));
            assertThat(task.settledBy()).contains("olga");

            open("#/h/" + id); // the task's story: key, state, who settled it, the wait; a bar; the settlement
            String tree = await(By.cssSelector("#tree .task-story")).getText();
            assertThat(tree).contains("key browser-approval/1", "completed by olga", "opened", "settled", "waited");
            assertThat(browser.findElements(By.cssSelector("#timeline .tl-lane .tl-seg.k-TASK"))).hasSize(1);
            assertThat(await(By.id("task-settlements")).getText()).contains("olga", "approval",
                    "browser-approval/1", "completed");
        }
    }

    @Test
    void ticked_rows_are_cancelled_after_one_confirmation_each_run_audited() throws Exception {
        dev.coop.Topic<Flaky> topic = dev.coop.Topic.of("browser-ticked", Flaky.class);
        dev.coop.Saga<Flaky> saga = dev.coop.Saga.on(topic, "browser-ticked-saga")
                .step("call-partner", step -> {
                    throw new IOException("the partner is gone");
                })
                .retry(dev.coop.RetryPolicy.attempts(1).parkWhenExhausted())
                .build();
        try (dev.coop.CoopEngine engine = dev.coop.Coop.engine(db.dataSource()).register(saga).start()) {
            MessageId ticked = engine.client().launch(topic, new Flaky("t-1"));
            MessageId left = engine.client().launch(topic, new Flaky("t-2"));
            dev.coop.test.Await.until("two parked runs", WAIT,
                    () -> engine.client().countParked("browser-ticked-saga") == 2);
            login("olga", "operator-pass");
            open("#/runs?saga=browser-ticked-saga");
            await(By.cssSelector("table.runs input.pick"));
            assertThat(browser.findElement(By.id("cancel-checked")).isEnabled()).isFalse();
            WebElement row = browser.findElements(By.cssSelector("table.runs tbody tr")).stream()
                    .filter(r -> r.findElements(By.cssSelector("a")).stream()
                            .anyMatch(a -> a.getAttribute("href").contains(ticked.toString())))
                    .findFirst().orElseThrow();
            row.findElement(By.cssSelector("input.pick")).click();
            assertThat(browser.findElement(By.id("cancel-checked")).getText()).isEqualTo("✗ Cancel 1 run ticked");
            browser.findElement(By.id("cancel-checked")).click();
            WebElement dialog = await(By.id("confirm"));
            assertThat(dialog.getText()).contains("Cancel 1 run (browser-ticked-saga)?");
            assertThat(browser.findElement(By.id("confirm-ok")).getText()).isEqualTo("Cancel 1 run");
            browser.findElement(By.id("confirm-reason")).sendKeys("Only this one (browser test)");
            browser.findElement(By.id("confirm-ok")).click();
            waitUntil(() -> browser.findElement(By.id("flash")).getText().contains("REQUESTED"));
            assertThat(engine.client().awaitCompletion(ticked, WAIT)).isEqualTo(Outcome.ROLLED_BACK);
            assertThat(engine.client().audit(ticked)).singleElement().satisfies(a -> {
                assertThat(a.actor()).isEqualTo("olga");
                assertThat(a.action()).isEqualTo("cancel");
            });
            assertThat(engine.client().statuses(left)).containsExactly(dev.coop.RunStatus.PARKED);
            assertThat(engine.client().audit(left)).isEmpty();
        }
    }

    // ---- helpers

    static void login(String user, String password) {
        browser.manage().deleteAllCookies();
        browser.get(dashboard.uri().resolve("login").toString());
        await(By.id("user")).sendKeys(user);
        browser.findElement(By.id("password")).sendKeys(password);
        browser.findElement(By.id("login")).click();
        waitUntil(() -> browser.findElement(By.id("who")).getText().contains(user));
    }

    static void open(String hash) {
        browser.get(dashboard.uri() + hash);
        browser.navigate().refresh(); // a new hash on the same page: reload so the test starts clean
    }

    static WebElement await(By by) {
        return new WebDriverWait(browser, WAIT, POLL).until(ExpectedConditions.visibilityOfElementLocated(by));
    }

    static void waitUntil(java.util.function.BooleanSupplier condition) {
        new WebDriverWait(browser, WAIT, POLL).ignoring(org.openqa.selenium.StaleElementReferenceException.class)
                .until(d -> condition.getAsBoolean());
    }

    static void assertNoAlert() {
        try {
            browser.switchTo().alert();
            throw new AssertionError("An alert opened: a script from a failure message ran");
        } catch (NoAlertPresentException expected) {
            // as it should be
        }
    }

    /** Into target/screenshots; with -Ddashboard.screenshots=<dir> (docs/images) there too. */
    static void screenshot(String name) throws IOException {
        byte[] png = browser.getScreenshotAs(OutputType.BYTES);
        Path dir = Path.of("target", "screenshots");
        Files.createDirectories(dir);
        Files.write(dir.resolve(name), png);
        String docs = System.getProperty("dashboard.screenshots");
        if (docs != null && !docs.isBlank()) {
            Path d = Path.of(docs);
            Files.createDirectories(d);
            Files.write(d.resolve(name), png);
        }
    }
}
