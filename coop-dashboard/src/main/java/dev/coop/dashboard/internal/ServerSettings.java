package dev.coop.dashboard.internal;

import java.nio.file.Path;
import java.time.Duration;

/**
 * How the standalone dashboard's server listens, as its builder validated them.
 *
 * @param threads request threads (Jetty's acceptor and selector threads come on top)
 * @param idleTimeout how long a connection may send nothing (while its headers or body are awaited, or between
 *        requests) before it is closed
 * @param keyStore a PKCS#12 or JKS key store: serve HTTPS with its key; null serves plain HTTP
 */
public record ServerSettings(String bind, int port, int threads, Duration idleTimeout, int maxConnections,
        int maxConnectionsPerClient, Path keyStore, String keyStorePassword) {
}
