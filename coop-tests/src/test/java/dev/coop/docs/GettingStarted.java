package dev.coop.docs;

// tag::getting-started[]
import com.zaxxer.hikari.HikariDataSource;
import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.CoopEngine;
import dev.coop.MessageId;
import dev.coop.Saga;
import dev.coop.Topic;
import dev.coop.failure.Failure;
import dev.coop.inspect.Outcome;
import dev.coop.render.Renderers;
import java.sql.Connection;
import java.time.Duration;
import javax.sql.DataSource;

public class GettingStarted {
    record AccountCreated(String accountId, String email) {
    }

    record ContractCreated(String accountId) {
    }

    static final Topic<AccountCreated> ACCOUNT_CREATED = Topic.of("account-created", AccountCreated.class);
    static final Topic<ContractCreated> CONTRACT_CREATED = Topic.of("contract-created", ContractCreated.class);

    static final Saga<AccountCreated> CRM = Saga.on(ACCOUNT_CREATED, "crm-sync")
            .step("create-customer", step -> {
                // business writes in the step's transaction
                try (var insert = step.connection().prepareStatement(
                        "INSERT INTO customer (id, email) VALUES (?, ?) ON CONFLICT (id) DO NOTHING")) {
                    insert.setString(1, step.payload().accountId());
                    insert.setString(2, step.payload().email());
                    insert.executeUpdate();
                }
                // a child in this run's scope: "confirm" starts only after every handler of it finished
                step.launch(CONTRACT_CREATED, new ContractCreated(step.payload().accountId()));
            })
            .compensateWith((step, cause) -> { // undoes create-customer, after the children rolled back
                try (var delete = step.connection().prepareStatement("DELETE FROM customer WHERE id = ?")) {
                    delete.setString(1, step.payload().accountId());
                    delete.executeUpdate();
                }
            })
            .step("confirm", step -> System.out.println("Customer " + step.payload().accountId() + " is ready"))
            .build();

    static final Saga<ContractCreated> CONTRACTS = Saga.on(CONTRACT_CREATED, "contracts")
            .step("check-account", step -> {
                if (step.payload().accountId().startsWith("blocked")) {
                    throw new IllegalStateException("Account " + step.payload().accountId() + " is blocked");
                }
            })
            .build();

    /** Arguments: a JDBC URL, a user and a password. */
    public static void main(String[] args) throws Exception {
        try (HikariDataSource dataSource = new HikariDataSource()) { // any DataSource; a HikariCP pool is best
            dataSource.setJdbcUrl(args[0]);
            dataSource.setUsername(args[1]);
            dataSource.setPassword(args[2]);
            run(dataSource);
        }
    }

    static void run(DataSource dataSource) throws Exception {
        try (Connection c = dataSource.getConnection(); var create = c.createStatement()) {
            create.execute("CREATE TABLE IF NOT EXISTS customer (id text PRIMARY KEY, email text NOT NULL)");
        }
        // the engine creates its own tables (schema "coop") when it starts
        try (CoopEngine engine = Coop.engine(dataSource).register(CRM, CONTRACTS).start()) {
            CoopClient client = engine.client(); // Coop.client(dataSource) works without an engine
            MessageId ada = client.launch(ACCOUNT_CREATED, new AccountCreated("acc-1", "ada@example.com"));
            MessageId bob;
            try (Connection c = dataSource.getConnection()) { // or inside your own transaction (outbox)
                c.setAutoCommit(false);
                bob = client.launch(c, ACCOUNT_CREATED, new AccountCreated("blocked-2", "bob@example.com"));
                c.commit();
            }
            Duration timeout = Duration.ofSeconds(10);
            Outcome adaOutcome = client.awaitCompletion(ada, timeout); // the whole hierarchy finished
            Outcome bobOutcome = client.awaitCompletion(bob, timeout);
            System.out.println("ada: " + adaOutcome + ", bob: " + bobOutcome); // COMMITTED, ROLLED_BACK

            System.out.println(Renderers.text().render(client.tree(bob))); // who ran what, and why it rolled back
            Failure failure = client.results(bob).getFirst().failure().orElseThrow();
            System.out.println(failure.render()); // the distributed stack trace
        }
    }
}
// end::getting-started[]
