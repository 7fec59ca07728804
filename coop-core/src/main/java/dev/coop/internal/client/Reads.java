package dev.coop.internal.client;

import dev.coop.CoopClient;
import dev.coop.Lineage;
import dev.coop.MessageId;
import dev.coop.RunResult;
import dev.coop.RunStatus;
import dev.coop.failure.CoopStoreException;
import dev.coop.failure.CoopValidationException;
import dev.coop.inspect.Event;
import dev.coop.inspect.Hierarchy;
import dev.coop.inspect.MessageMatch;
import dev.coop.inspect.RunCount;
import dev.coop.inspect.RunQuery;
import dev.coop.inspect.RunSummary;
import dev.coop.inspect.RunView;
import dev.coop.internal.read.Inspection;
import dev.coop.internal.read.RunCountRollup;
import dev.coop.internal.read.RunListing;
import dev.coop.internal.read.Search;
import dev.coop.internal.read.Unfinished;
import dev.coop.internal.store.RunData;
import dev.coop.internal.store.Store;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;

/** What a client reads: the time, results, statuses, event logs, trees, listings, counts and searches. */
public final class Reads {
    private final ClientContext client;
    private final Inspection inspection;
    private final RunListing listing;
    private final Unfinished unfinished;
    private final RunData runData;
    private final Search search;
    private final RunCountRollup counts;

    public Reads(ClientContext client) {
        this.client = client;
        this.inspection = new Inspection(client.schema());
        this.listing = new RunListing(client.schema());
        this.unfinished = new Unfinished(client.schema());
        this.runData = new RunData(client.schema());
        this.search = new Search(client.schema());
        this.counts = new RunCountRollup(client.schema());
    }

    public Instant now() {
        if (client.time().controlled()) {
            return client.time().bind().toInstant();
        }
        try (Connection c = client.dataSource().getConnection()) {
            return client.time().now(c);
        } catch (SQLException e) {
            throw new CoopStoreException("Could not read the database's clock: " + e.getMessage(), e);
        }
    }

    public List<RunResult> results(MessageId message) {
        Objects.requireNonNull(message, "message");
        Store store = client.store();
        try (Connection c = client.dataSource().getConnection()) {
            List<RunResult> results = store.results(c, message, client.json().mapper());
            if (results.isEmpty() && !store.messageExists(c, message)) {
                throw noMessage(message);
            }
            return results;
        } catch (SQLException e) {
            throw new CoopStoreException("Could not read the results of message " + message + ": " + e.getMessage(),
                    e);
        }
    }

    public <T> T result(MessageId message, Class<T> type) {
        List<RunResult> results = results(message);
        if (results.size() != 1) {
            throw new CoopValidationException("Message " + message + " has " + results.size() + " runs "
                    + results.stream().map(RunResult::saga).toList() + "; read them with results()");
        }
        return results.getFirst().get(type);
    }

    public String payloadJson(MessageId message) {
        Objects.requireNonNull(message, "message");
        return client.inTransaction("read the payload of message " + message, c -> runData.payload(c, message));
    }

    public String resultJson(UUID runId) {
        Objects.requireNonNull(runId, "runId");
        return client.inTransaction("read the result of run " + runId, c -> runData.result(c, runId));
    }

    public List<RunStatus> statuses(MessageId message) {
        Store store = client.store();
        try (Connection c = client.dataSource().getConnection()) {
            List<RunStatus> statuses = store.runStatuses(c, message);
            if (statuses.isEmpty() && !store.messageExists(c, message)) {
                throw noMessage(message);
            }
            return statuses;
        } catch (SQLException e) {
            throw new CoopStoreException(
                    "Could not read the runs of message " + message + ": " + e.getMessage(), e);
        }
    }

    public List<Event> events(MessageId message, long afterId, int limit) {
        Objects.requireNonNull(message, "message");
        if (limit < 1 || limit > 100_000 || afterId < 0) {
            throw new CoopValidationException("An event page needs afterId >= 0 and a limit of 1 to 100000, was "
                    + afterId + " and " + limit);
        }
        Store store = client.store();
        try (Connection c = client.dataSource().getConnection()) {
            List<Event> events = store.events(c, message, afterId, limit);
            if (events.isEmpty() && afterId == 0 && !store.messageExists(c, message)) {
                throw noMessage(message);
            }
            return events;
        } catch (SQLException e) {
            throw new CoopStoreException("Could not read the events of message " + message + ": " + e.getMessage(),
                    e);
        }
    }

    public List<Event> events(MessageId message) {
        Objects.requireNonNull(message, "message");
        List<Event> events = events(message, 0, CoopClient.MAX_EVENTS_AT_ONCE + 1);
        if (events.size() > CoopClient.MAX_EVENTS_AT_ONCE) {
            throw new CoopValidationException("The hierarchy of message " + message + " has more than "
                    + CoopClient.MAX_EVENTS_AT_ONCE + " events: read them in pages with events(message, afterId,"
                    + " limit) (coop events --after <id> --limit <n>)");
        }
        return events;
    }

    private CoopValidationException noMessage(MessageId message) {
        return new CoopValidationException("No message " + message + " in schema '" + client.schema().value() + "'");
    }

    public Hierarchy tree(MessageId message) {
        Objects.requireNonNull(message, "message");
        return client.inTransaction("read the tree of message " + message, c -> inspection.hierarchy(c, message));
    }

    public RunView tree(Lineage run) {
        Objects.requireNonNull(run, "run");
        return client.inTransaction("read the tree of run " + run, c -> inspection.run(c, run));
    }

    public List<RunSummary> runs(RunQuery query) {
        Objects.requireNonNull(query, "query");
        return client.inTransaction("list runs", c -> listing.runs(c, query));
    }

    public Map<RunStatus, Long> countRuns(RunQuery query) {
        Objects.requireNonNull(query, "query");
        return client.inTransaction("count runs", c -> listing.countRuns(c, query));
    }

    public Map<RunStatus, Long> unfinishedRuns() {
        try (Connection c = client.dataSource().getConnection()) {
            return unfinished.unfinishedRuns(c);
        } catch (SQLException e) {
            throw new CoopStoreException("Could not count the unfinished runs: " + e.getMessage(), e);
        }
    }

    public List<RunCount> counts(Duration window) {
        if (window == null || window.compareTo(Duration.ofMinutes(1)) < 0
                || window.compareTo(RunCountRollup.MAX_WINDOW) > 0) {
            throw new CoopValidationException("window must be between 1 minute and "
                    + RunCountRollup.MAX_WINDOW.toDays() + " days, was " + window);
        }
        return client.inTransaction("read the counts of the last " + window, c -> counts.read(c, window));
    }

    public List<MessageMatch> search(String text, java.time.OffsetDateTime before, int limit) {
        if (text == null || text.isBlank() || text.length() > 1_000) {
            throw new CoopValidationException("Search for 1 to 1000 characters, was "
                    + (text == null ? "null" : text.length() + " characters"));
        }
        String wanted = text.strip();
        for (int i = 0; i < wanted.length(); i++) {
            if (Character.isISOControl(wanted.charAt(i))) { // NUL cannot reach PostgreSQL; the rest garble logs
                throw new CoopValidationException("The search text must not contain control characters, found U+"
                        + String.format("%04X", (int) wanted.charAt(i)) + " at index " + i);
            }
        }
        if (limit < 1 || limit > Search.MAX) {
            throw new CoopValidationException("A search returns 1 to " + Search.MAX + " matches, limit was " + limit);
        }
        java.time.OffsetDateTime page = before == null
                ? null
                : new dev.coop.inspect.RunQuery(null, null, null, null, before, 1).before();
        return client.inTransaction("search for '" + wanted + "'", c -> search.find(c, wanted, page, limit));
    }
}
