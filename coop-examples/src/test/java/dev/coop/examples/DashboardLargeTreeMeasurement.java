package dev.coop.examples;

import dev.coop.Coop;
import dev.coop.CoopEngine;
import dev.coop.MessageId;
import dev.coop.Saga;
import dev.coop.Topic;
import dev.coop.dashboard.DashboardServer;
import dev.coop.dashboard.Role;
import dev.coop.test.CoopDatabase;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * How long the dashboard takes to open a hierarchy of 1,021 runs (20 children of 50 grandchildren each) in headless
 * Chromium: measured and printed, not asserted. Opt in with {@code -Ddashboard.measure=true} (building the hierarchy
 * takes a while); the numbers are in docs/dashboard.md.
 */
class DashboardLargeTreeMeasurement {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase(24);

    record Fan(int width) {
    }

    static final Topic<Fan> ROOT = Topic.of("measure-root", Fan.class);
    static final Topic<Fan> MIDDLE = Topic.of("measure-middle", Fan.class);
    static final Topic<Fan> LEAF = Topic.of("measure-leaf", Fan.class);

    @TempDir
    static Path profile;

    @Test
    void a_hierarchy_of_a_thousand_runs_opens() throws Exception {
        Assumptions.assumeTrue(Boolean.getBoolean("dashboard.measure"), "a measurement: -Ddashboard.measure=true");
        Chromium.assumeInstalled();
        Saga<Fan> root = Saga.on(ROOT, "measure-root").step("fan-out", step -> {
            for (int i = 0; i < 20; i++) {
                step.launch(MIDDLE, new Fan(50));
            }
        }).build();
        Saga<Fan> middle = Saga.on(MIDDLE, "measure-middle").step("fan-out", step -> {
            for (int i = 0; i < step.payload().width(); i++) {
                step.launch(LEAF, new Fan(0));
            }
        }).step("done", step -> {
        }).build();
        Saga<Fan> leaf = Saga.on(LEAF, "measure-leaf").step("work", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(db.dataSource()).workers(8).register(root, middle, leaf).start();
                DashboardServer dashboard = DashboardServer.builder(engine.client()).port(0)
                        .user("olga", "operator-pass", Role.OPERATOR).start()) {
            long built = System.nanoTime();
            MessageId id = engine.client().launch(ROOT, new Fan(20));
            engine.client().awaitCompletion(id, Duration.ofMinutes(5));
            System.out.printf("built 1,021 runs in %d ms%n", (System.nanoTime() - built) / 1_000_000);
            ChromeDriver browser = Chromium.start(profile);
            try {
                WebDriverWait wait = new WebDriverWait(browser, Duration.ofMinutes(1));
                browser.get(dashboard.uri().resolve("login").toString());
                browser.findElement(By.id("user")).sendKeys("olga");
                browser.findElement(By.id("password")).sendKeys("operator-pass\n");
                wait.until(ExpectedConditions.textToBePresentInElementLocated(By.id("who"), "olga"));
                for (int round = 1; round <= 3; round++) {
                    browser.get(dashboard.uri() + "#/runs");
                    wait.until(ExpectedConditions.visibilityOfElementLocated(By.cssSelector("table.runs")));
                    long start = System.nanoTime();
                    browser.executeScript("location.hash = arguments[0]", "#/h/" + id); // as a click on a link
                    wait.until(ExpectedConditions
                            .presenceOfElementLocated(By.cssSelector("#timeline .tl-row:nth-child(1000)")));
                    long ms = (System.nanoTime() - start) / 1_000_000;
                    Object api = browser.executeAsyncScript("""
                            const done = arguments[arguments.length - 1];
                            const t = performance.now();
                            fetch('api/hierarchy?message=' + arguments[0]).then(r => r.text())
                              .then(b => done(Math.round(performance.now() - t) + ' ms, ' + b.length + ' bytes'));
                            """, id.toString());
                    Object phases = browser.executeScript("const m = document.getElementById('main');"
                            + " return 'fetch ' + m.dataset.loadMs + ' ms, draw ' + m.dataset.drawMs + ' ms'");
                    System.out.printf("round %d: link clicked to tree and timeline drawn %d ms (%s); api/hierarchy"
                            + " alone %s%n", round, ms, phases, api);
                }
            } finally {
                browser.quit();
            }
        }
    }
}
