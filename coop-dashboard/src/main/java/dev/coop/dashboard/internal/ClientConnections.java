package dev.coop.dashboard.internal;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.SelectableChannel;
import java.nio.channels.SocketChannel;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.eclipse.jetty.io.SelectorManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * At most so many open connections per client address: one more is closed as it is accepted, before Jetty reads a
 * byte of it (and logged once a minute per address), so that one client cannot take every connection the server
 * allows.
 */
final class ClientConnections implements SelectorManager.AcceptListener {
    private static final Logger log = LoggerFactory.getLogger(ClientConnections.class);

    private final int perClient;
    private final Map<InetAddress, Integer> open = new ConcurrentHashMap<>();
    private final Map<SelectableChannel, InetAddress> counted = new ConcurrentHashMap<>();
    private final Map<InetAddress, Long> lastLogged = new ConcurrentHashMap<>();

    ClientConnections(int perClient) {
        this.perClient = perClient;
    }

    @Override
    public void onAccepting(SelectableChannel channel) {
        InetAddress client = client(channel);
        if (client == null) {
            return;
        }
        if (open.merge(client, 1, Integer::sum) > perClient) {
            release(client);
            refused(client);
            try {
                channel.close(); // Jetty's registration then fails, and it forgets the channel
            } catch (java.io.IOException e) {
                log.debug("Could not close a refused connection of {}", client, e);
            }
            return;
        }
        counted.put(channel, client);
    }

    @Override
    public void onAcceptFailed(SelectableChannel channel, Throwable cause) {
        onClosed(channel);
    }

    @Override
    public void onClosed(SelectableChannel channel) {
        InetAddress client = counted.remove(channel);
        if (client != null) {
            release(client);
        }
    }

    private void release(InetAddress client) {
        open.computeIfPresent(client, (c, n) -> n <= 1 ? null : n - 1);
    }

    private void refused(InetAddress client) {
        long now = System.nanoTime();
        Long last = lastLogged.get(client);
        if (last == null || now - last > 60_000_000_000L) {
            if (lastLogged.size() > 10_000) {
                lastLogged.clear();
            }
            lastLogged.put(client, now);
            log.warn("Dashboard: client {} has {} connections open, the most allowed; closing its new ones",
                    client.getHostAddress(), perClient);
        }
    }

    private static InetAddress client(SelectableChannel channel) {
        try {
            return channel instanceof SocketChannel s && s.getRemoteAddress() instanceof InetSocketAddress a
                    ? a.getAddress()
                    : null;
        } catch (java.io.IOException e) {
            return null;
        }
    }
}
