package dev.coop.examples;

import com.zaxxer.hikari.HikariDataSource;
import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.CoopEngine;
import dev.coop.Event;
import dev.coop.MessageId;
import dev.coop.Outcome;
import dev.coop.Saga;
import dev.coop.Topic;
import dev.coop.test.CoopPostgres;
import java.time.Duration;
import java.util.List;

/**
 * A small onboarding: creating an account is handled by CRM and billing; the contract is created only after both
 * finished, and the welcome e-mail goes out last. Runs on an embedded PostgreSQL unless COOP_JDBC_URL is set; exits
 * non-zero when the hierarchy did not end as designed.
 */
public final class Demo {
    record AccountCreated(String accountId, String email) {
    }

    record ContractCreated(String accountId) {
    }

    static final Topic<AccountCreated> ACCOUNT_CREATED = Topic.of("account-created", AccountCreated.class);
    static final Topic<ContractCreated> CONTRACT_CREATED = Topic.of("contract-created", ContractCreated.class);

    private Demo() {
    }

    public static void main(String[] args) {
        CoopPostgres server = CoopPostgres.shared();
        String database = server.createDatabase("coop_demo");
        try (HikariDataSource onboardingPool = server.dataSource(database, 6, "onboarding");
                HikariDataSource crmPool = server.dataSource(database, 6, "crm");
                HikariDataSource billingPool = server.dataSource(database, 6, "billing")) {
            System.exit(run(onboardingPool, crmPool, billingPool) ? 0 : 1);
        }
    }

    static boolean run(HikariDataSource onboardingPool, HikariDataSource crmPool, HikariDataSource billingPool) {
        Saga<AccountCreated> crm = Saga.on(ACCOUNT_CREATED, "crm-sync")
                .step("create-customer", step -> say("crm: customer " + step.payload().accountId()))
                .build();
        Saga<AccountCreated> billing = Saga.on(ACCOUNT_CREATED, "billing")
                .step("create-billing-account", step -> say("billing: account for " + step.payload().email()))
                .step("create-contract", step -> {
                    say("billing: contract for " + step.payload().accountId());
                    step.launch(CONTRACT_CREATED, new ContractCreated(step.payload().accountId()));
                })
                .build();
        Saga<ContractCreated> invoicing = Saga.on(CONTRACT_CREATED, "invoicing")
                .step("schedule-invoices", step -> say("invoicing: invoices for " + step.payload().accountId()))
                .build();
        Saga<AccountCreated> onboarding = Saga.on(Topic.of("onboarding", AccountCreated.class), "onboarding")
                .step("create-account", step -> {
                    say("onboarding: account " + step.payload().accountId() + " created");
                    step.launch(ACCOUNT_CREATED, step.payload());
                })
                .step("send-welcome-email", step -> say("onboarding: welcome e-mail to " + step.payload().email()))
                .build();
        try (CoopEngine crmService = Coop.engine(crmPool).name("crm").workers(2).register(crm).start();
                CoopEngine billingService = Coop.engine(billingPool).name("billing").workers(2)
                        .register(billing, invoicing)
                        .start();
                CoopEngine onboardingService = Coop.engine(onboardingPool).name("onboarding").workers(2)
                        .register(onboarding).start()) {
            CoopClient client = onboardingService.client();
            MessageId id = client.launch(Topic.of("onboarding", AccountCreated.class),
                    new AccountCreated("acc-42", "ada@example.com"));
            Outcome outcome = client.awaitCompletion(id, Duration.ofSeconds(30));
            List<Event> events = client.events(id);
            System.out.println();
            System.out.println("Event log of message " + id + ":");
            for (Event e : events) {
                System.out.printf("  %-3d %-9s %-11s %-26s %s%n", e.id(), e.type(), e.saga() == null ? "-" : e.saga(),
                        e.step() == null ? "-" : e.step(),
                        e.lineage().depth() == 1 ? "" : "depth " + e.lineage().depth());
            }
            System.out.println();
            System.out.println("Outcome: " + outcome + " (" + events.size() + " events)");
            return outcome == Outcome.COMMITTED;
        }
    }

    private static void say(String line) {
        System.out.println("  " + line);
    }
}
