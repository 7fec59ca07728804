package dev.coop.examples;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Assumptions;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;

/**
 * Debian's headless Chromium driven through Debian's chromedriver: nothing is downloaded at run time (Selenium
 * Manager is never asked). Tests are skipped, saying how to install them, where the packages are missing; CI
 * ({@code .ci/run}) installs them.
 */
final class Chromium {
    static final Path BROWSER = Path.of(System.getProperty("chromium.binary", "/usr/bin/chromium"));
    static final Path DRIVER = Path.of(System.getProperty("chromedriver.binary", "/usr/bin/chromedriver"));

    private Chromium() {
    }

    /** Skips the calling test class unless both programs are installed. */
    static void assumeInstalled() {
        Assumptions.assumeTrue(Files.isExecutable(BROWSER) && Files.isExecutable(DRIVER),
                "Browser tests skipped: " + BROWSER + " or " + DRIVER + " is missing. Install them with"
                        + " 'sudo apt-get install -y chromium chromium-driver' (Debian/Ubuntu), or point"
                        + " -Dchromium.binary and -Dchromedriver.binary at yours");
    }

    /** A fresh headless browser at laptop width, with a profile of its own. */
    static ChromeDriver start(Path profile) {
        ChromeOptions options = new ChromeOptions();
        options.setBinary(BROWSER.toFile());
        options.addArguments("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--window-size=1366,900", "--user-data-dir=" + profile);
        ChromeDriverService service = new ChromeDriverService.Builder().usingDriverExecutable(DRIVER.toFile())
                .usingAnyFreePort().withTimeout(Duration.ofSeconds(60)).build();
        ChromeDriver driver = new ChromeDriver(service, options);
        driver.manage().timeouts().scriptTimeout(Duration.ofSeconds(30));
        return driver;
    }
}
