package dev.coop.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.coop.Coop;
import dev.coop.CoopClient;
import dev.coop.LaunchOptions;
import dev.coop.MessageId;
import dev.coop.Topic;
import dev.coop.failure.CoopTimeoutException;
import dev.coop.inspect.Hierarchy;
import dev.coop.inspect.Outcome;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code coop launch <topic> <json>}: a message launched from the shell, so that a saga can be tried without code;
 * prints its id and, with {@code --wait}, the tree once the hierarchy finished.
 */
@Command(name = "launch", mixinStandardHelpOptions = true, description = {
        "Launch a message on a topic with a JSON payload; print its message id.",
        "With --wait, wait until the whole hierarchy finished and print its tree (exit 1 unless it committed)."}, footer = {
                "%nExamples:",
                "  coop launch orders '{\"order\": \"o-17\"}' --business-key customer/1 --tag vip --wait",
                "  coop launch reminders '{\"to\": \"ada\"}' --delay 15m --idempotency-key reminder/ada/1"})
final class LaunchCommand extends Commands.Base {
    @Parameters(index = "0", paramLabel = "<topic>", description = "The topic (a saga registered for it handles it)")
    String topic;

    @Parameters(index = "1", paramLabel = "<json>", description = "The payload, as JSON ('{\"order\": \"o-17\"}')")
    String payload;

    @Option(names = "--business-key", paramLabel = "<key>", description = "Label the hierarchy with this key"
            + " (coop runs --key, the dashboard's search box)")
    String businessKey;

    @Option(names = "--idempotency-key", paramLabel = "<key>", description = "Launch once per key and topic: a"
            + " second launch with it answers the first message's id")
    String idempotencyKey;

    @Option(names = "--tag", paramLabel = "<tag>", description = "A tag (repeat for more, at most 10)")
    List<String> tags;

    @Option(names = "--at", paramLabel = "<time>", description = "Start the runs at this ISO-8601 time"
            + " (2026-05-01T08:00:00Z), not before")
    String at;

    @Option(names = "--delay", paramLabel = "<age>", converter = Converters.AgeConverter.class, description = "Start"
            + " the runs this long from now, by the database's clock (30s, 15m, 2h, 1d)")
    Duration delay;

    @Option(names = "--wait", description = "Wait until the hierarchy finished, then print its tree")
    boolean await;

    @Option(names = "--timeout", paramLabel = "<age>", converter = Converters.AgeConverter.class, defaultValue = "5m", description = "With --wait: give up waiting after this long (default ${DEFAULT-VALUE})")
    Duration timeout;

    @Override
    public void run() {
        JsonNode value;
        try {
            value = Coop.defaultObjectMapper().readTree(payload);
        } catch (JsonProcessingException e) {
            throw new CliException(CoopCli.EXIT_USAGE, "<json> is not JSON: " + e.getOriginalMessage());
        }
        if (value == null || value.isMissingNode()) {
            throw new CliException(CoopCli.EXIT_USAGE, "<json> is empty: give a JSON value ('{}' for none)");
        }
        if (at != null && delay != null) {
            throw new CliException(CoopCli.EXIT_USAGE, "Give --at or --delay, not both");
        }
        CoopClient client = database().client;
        MessageId id = Commands.operate(() -> client.launch(Topic.of(topic, JsonNode.class), value, options(client)));
        if (!await) {
            print(id, null, null);
            return;
        }
        Outcome outcome;
        try {
            outcome = client.awaitCompletion(id, timeout);
        } catch (CoopTimeoutException e) {
            throw new CliException(CoopCli.EXIT_FAILURE, "Message " + id + " was launched, but its hierarchy did not"
                    + " finish within " + timeout.toSeconds() + " s (coop tree " + id + " shows where it is)", e);
        }
        print(id, outcome, client.tree(id));
        if (outcome != Outcome.COMMITTED) {
            throw new CliException(CoopCli.EXIT_FAILURE, "Message " + id + ": " + outcome);
        }
    }

    private LaunchOptions options(CoopClient client) {
        LaunchOptions o = LaunchOptions.none();
        if (businessKey != null) {
            o = o.businessKey(businessKey);
        }
        if (idempotencyKey != null) {
            o = o.idempotencyKey(idempotencyKey);
        }
        if (tags != null && !tags.isEmpty()) {
            o = o.tags(tags.toArray(String[]::new));
        }
        if (at != null) {
            o = o.at(instant(at));
        } else if (delay != null) {
            o = o.at(client.now().plus(delay));
        }
        return o;
    }

    private static Instant instant(String text) {
        try {
            return OffsetDateTime.parse(text.strip()).toInstant();
        } catch (DateTimeParseException notOffset) {
            try {
                return Instant.parse(text.strip());
            } catch (DateTimeParseException e) {
                throw new CliException(CoopCli.EXIT_USAGE, "--at '" + text + "' is not an ISO-8601 time with offset"
                        + " (2026-05-01T08:00:00Z)");
            }
        }
    }

    private void print(MessageId id, Outcome outcome, Hierarchy tree) {
        if (cli.json) {
            ObjectNode n = JsonNodeFactory.instance.objectNode();
            n.put("messageId", id.toString());
            if (tree != null) {
                n.put("outcome", outcome.name());
                n.set("tree", cli.jsonRenderer().hierarchy(tree));
            }
            cli.out().println(cli.jsonRenderer().write(n));
        } else {
            cli.out().println(id);
            if (tree != null) {
                cli.out().print(cli.text().render(tree));
            }
        }
    }
}
