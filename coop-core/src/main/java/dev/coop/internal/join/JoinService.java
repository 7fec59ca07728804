package dev.coop.internal.join;

import dev.coop.internal.store.Json;
import dev.coop.internal.store.InputLimits;
import dev.coop.internal.store.SchemaName;
import dev.coop.internal.store.Store;
import dev.coop.internal.store.Tx;

import dev.coop.MessageId;
import dev.coop.join.AttachResult;
import dev.coop.join.JoinId;
import dev.coop.join.JoinSpec;
import dev.coop.join.JoinView;
import dev.coop.join.Joins;
import dev.coop.join.ReportResult;

import dev.coop.failure.CoopValidationException;

import java.sql.Connection;
import java.sql.SQLException;
import dev.coop.render.TerminalText;
import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;

/** The implementation of {@link Joins} over the join tables. */
public final class JoinService implements Joins {
    private final DataSource dataSource;
    private final SchemaName schema;
    private final JoinBook book;

    public JoinService(DataSource dataSource, Store store, Json json) {
        this.dataSource = dataSource;
        this.schema = store.schema();
        this.book = new JoinBook(store, json);
    }

    @Override
    public JoinId start(JoinSpec spec) {
        Prepared prepared = prepare(spec);
        JoinId id = Tx.run(dataSource, "start a join", c -> insert(c, prepared));
        expectTimeout(spec);
        return id;
    }

    @Override
    public JoinId start(Connection connection, JoinSpec spec) {
        Objects.requireNonNull(connection, "connection");
        Prepared prepared = prepare(spec);
        JoinId id = inCallerTransaction(connection, "start a join", c -> insert(c, prepared));
        expectTimeout(spec);
        return id;
    }

    private record Prepared(JoinSpec spec, String metadata) {
    }

    private Prepared prepare(JoinSpec spec) {
        Objects.requireNonNull(spec, "spec");
        spec.checkComplete();
        return new Prepared(spec, book.metadataJson(spec.metadata()));
    }

    private JoinId insert(Connection c, Prepared p) throws SQLException {
        JoinSpec spec = p.spec();
        return book.start(c, spec.key(), spec.expected(), spec.isFailIfAnyFailed(), p.metadata(),
                spec.onComplete().name(), spec.onFail().name(), spec.timeout() == null
                        ? null
                        : spec.timeout().toMillis());
    }

    private void expectTimeout(JoinSpec spec) {
        if (spec.timeout() != null) {
            JoinTimer.expect(schema, spec.timeout().toMillis());
        }
    }

    @Override
    public AttachResult attach(JoinId join, MessageId message) {
        check(join, message);
        return Tx.run(dataSource, "attach message " + message + " to join " + join,
                c -> book.attach(c, join, message));
    }

    @Override
    public AttachResult attach(Connection connection, JoinId join, MessageId message) {
        Objects.requireNonNull(connection, "connection");
        check(join, message);
        return inCallerTransaction(connection, "attach message " + message + " to join " + join,
                c -> book.attach(c, join, message));
    }

    @Override
    public ReportResult reportCompleted(JoinId join, MessageId message) {
        return report(join, message, false);
    }

    @Override
    public ReportResult reportFailed(JoinId join, MessageId message) {
        return report(join, message, true);
    }

    @Override
    public ReportResult reportCompleted(Connection connection, JoinId join, MessageId message) {
        return report(Objects.requireNonNull(connection, "connection"), join, message, false);
    }

    @Override
    public ReportResult reportFailed(Connection connection, JoinId join, MessageId message) {
        return report(Objects.requireNonNull(connection, "connection"), join, message, true);
    }

    private ReportResult report(JoinId join, MessageId message, boolean failed) {
        check(join, message);
        return Tx.run(dataSource, what(join, message, failed), c -> book.report(c, join, message, failed));
    }

    private ReportResult report(Connection connection, JoinId join, MessageId message, boolean failed) {
        check(join, message);
        return inCallerTransaction(connection, what(join, message, failed),
                c -> book.report(c, join, message, failed));
    }

    private static String what(JoinId join, MessageId message, boolean failed) {
        return "report message " + message + (failed ? " failed" : " completed") + " in join " + join;
    }

    @Override
    public JoinView get(JoinId join) {
        Objects.requireNonNull(join, "join");
        return Tx.run(dataSource, "read join " + join, c -> book.get(c, join));
    }

    @Override
    public List<JoinView> byKey(String key, int limit) {
        if (key == null) {
            throw new CoopValidationException("A join key is required (null)");
        }
        if (key.isEmpty() || key.length() > InputLimits.MAX_KEY_LENGTH || key.indexOf('\0') >= 0
                || InputLimits.loneSurrogateAt(key) >= 0) {
            throw new CoopValidationException("Joins.byKey key must be 1 to " + InputLimits.MAX_KEY_LENGTH
                    + " characters without NUL or unpaired surrogates (as a join's key), was "
                    + (key.length() > 40 ? key.length() + " characters" : "'" + TerminalText.escape(key) + "'"));
        }
        if (limit < 1 || limit > 1000) {
            throw new CoopValidationException("limit must be between 1 and 1000, was " + limit);
        }
        return Tx.run(dataSource, "list the joins with key '" + key + "'", c -> book.byKey(c, key, limit));
    }

    private static void check(JoinId join, MessageId message) {
        if (join == null) {
            throw new CoopValidationException("A join id is required (null)");
        }
        if (message == null) {
            throw new CoopValidationException("A message id is required (null)");
        }
    }

    private static <T> T inCallerTransaction(Connection c, String what, Tx.Work<T> work) {
        return Tx.onCallersConnection(c, what, work);
    }
}
