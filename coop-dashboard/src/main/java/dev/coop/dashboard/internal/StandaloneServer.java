package dev.coop.dashboard.internal;

import java.net.InetSocketAddress;
import java.util.concurrent.Executor;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.ConnectionFactory;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.NetworkConnectionLimit;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.SecureRequestCustomizer;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.SslConnectionFactory;
import org.eclipse.jetty.server.handler.ErrorHandler;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.ssl.SslContextFactory;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The standalone dashboard on Jetty's core server (no servlet container). Jetty reads request headers without a
 * thread; a body (a login form, an action) is read the same way, up to {@link #MAX_BODY} bytes (a larger declared
 * length is answered 413 at once), before a request thread runs the {@link Gate}. A connection that sends nothing for
 * the idle timeout is closed, each client address has at most so many connections, and the server at most so many.
 */
public final class StandaloneServer implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(StandaloneServer.class);
    /** The largest request body read (an action's JSON; a login form allows less). */
    static final int MAX_BODY = 16 * 1024;
    private static final byte[] NONE = new byte[0];

    private final Server server;
    private final ServerConnector connector;
    private final boolean tls;

    public StandaloneServer(ServerSettings settings, Gate gate) throws Exception {
        QueuedThreadPool pool = new QueuedThreadPool(settings.threads() + 2, Math.min(2, settings.threads()));
        pool.setName("coop-dashboard");
        pool.setDaemon(true);
        pool.setReservedThreads(0);
        this.server = new Server(pool);
        this.tls = settings.keyStore() != null;
        this.connector = new ServerConnector(server, 1, 1, factories(settings));
        connector.setHost(settings.bind());
        connector.setPort(settings.port());
        connector.setIdleTimeout(settings.idleTimeout().toMillis());
        connector.addEventListener(new ClientConnections(settings.maxConnectionsPerClient()));
        server.addConnector(connector);
        server.addBean(new NetworkConnectionLimit(settings.maxConnections(), connector));
        ErrorHandler errors = new ErrorHandler();
        errors.setShowStacks(false);
        errors.setShowCauses(false);
        errors.setShowMessageInTitle(false);
        server.setErrorHandler(errors);
        server.setHandler(new Entry(gate, pool));
        server.setStopTimeout(0);
        try {
            server.start();
        } catch (Exception e) {
            close(); // a port in use, an unreadable key store: nothing is left running
            throw e;
        }
    }

    private ConnectionFactory[] factories(ServerSettings settings) {
        HttpConfiguration http = new HttpConfiguration();
        http.setSendServerVersion(false);
        http.setSendXPoweredBy(false);
        http.setRequestHeaderSize(16 * 1024);
        HttpConnectionFactory plain = new HttpConnectionFactory(http);
        if (!tls) {
            return new ConnectionFactory[]{plain};
        }
        SecureRequestCustomizer secure = new SecureRequestCustomizer();
        secure.setSniHostCheck(false); // the dashboard is reached by whatever name or address its operators use
        http.addCustomizer(secure);
        SslContextFactory.Server ssl = new SslContextFactory.Server();
        ssl.setKeyStorePath(settings.keyStore().toString());
        ssl.setKeyStorePassword(settings.keyStorePassword());
        return new ConnectionFactory[]{new SslConnectionFactory(ssl, plain.getProtocol()), plain};
    }

    public int port() {
        return connector.getLocalPort();
    }

    /** The address it listens on, as bound. */
    public InetSocketAddress address() {
        return new InetSocketAddress(connector.getHost(), port());
    }

    public boolean tls() {
        return tls;
    }

    @Override
    public void close() {
        try {
            server.stop();
        } catch (Exception e) {
            log.warn("The dashboard's server did not stop cleanly", e);
        }
    }

    /** Reads a POST's body without holding a thread, then runs the gate on a request thread. */
    private static final class Entry extends org.eclipse.jetty.server.Handler.Abstract {
        private final Gate gate;
        private final Executor threads;

        Entry(Gate gate, Executor threads) {
            this.gate = gate;
            this.threads = threads;
        }

        @Override
        public boolean handle(Request request, Response response, Callback callback) {
            if (!request.getMethod().equals("POST")) {
                serve(request, response, callback, NONE);
                return true;
            }
            if (request.getLength() > MAX_BODY) {
                tooLarge(request, response, callback);
                return true;
            }
            Content.Source.asByteArrayAsync(request, MAX_BODY).whenComplete((body, failure) -> {
                if (failure == null) {
                    threads.execute(() -> serve(request, response, callback, body));
                } else if (Request.getContentBytesRead(request) > MAX_BODY) {
                    tooLarge(request, response, callback);
                } else {
                    // the client went away or stalled past the idle timeout: Jetty closes the connection quietly
                    callback.failed(failure instanceof java.util.concurrent.CompletionException c
                            && c.getCause() != null ? c.getCause() : failure);
                }
            });
            return true;
        }

        private void serve(Request request, Response response, Callback callback, byte[] body) {
            JettyExchange ex = new JettyExchange(request, response, callback, body);
            try {
                gate.serve(ex);
                if (!ex.sent()) {
                    Responses.error(ex, 500, "The dashboard could not answer");
                }
            } catch (Throwable t) {
                if (ex.sent()) {
                    log.debug("The dashboard's answer to {} failed", ex.path(), t);
                } else {
                    callback.failed(t);
                }
            }
        }

        private static void tooLarge(Request request, Response response, Callback callback) {
            JettyExchange ex = new JettyExchange(request, response, callback, NONE);
            Responses.secure(ex);
            ex.responseHeader("Connection", "close"); // the rest of the body is not read
            try {
                Responses.error(ex, 413, "The request body is larger than " + MAX_BODY + " bytes");
            } catch (java.io.IOException | RuntimeException e) {
                callback.failed(e);
            }
        }
    }
}
