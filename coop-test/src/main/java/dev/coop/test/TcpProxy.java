package dev.coop.test;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A TCP proxy between clients (engines) and a server (PostgreSQL) that can cut the network silently, as a partition
 * does, without root: {@link #blackhole()} stops forwarding in both directions while every socket stays open (no
 * reset, no close: the peers hear nothing), and {@link #heal()} forwards what was held back and goes on. A client that
 * gave up meanwhile and closed its socket is seen closing only after the heal, as after a real partition.
 *
 * <pre>{@code
 * try (TcpProxy proxy = TcpProxy.to("localhost", 5432)) {
 *     String url = proxy.jdbcUrl(db.jdbcUrl()); // the same database, through the proxy
 *     ...
 *     proxy.blackhole();
 *     ...
 *     proxy.heal();
 * }
 * }</pre>
 */
public final class TcpProxy implements AutoCloseable {
    private final String host;
    private final int port;
    private final ServerSocket server;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private final Object gate = new Object();
    private boolean cut;
    private volatile boolean closed;

    private TcpProxy(String host, int port) throws IOException {
        this.host = host;
        this.port = port;
        this.server = new ServerSocket();
        server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        Thread.ofPlatform().daemon(true).name("tcp-proxy-accept").start(this::accept);
    }

    /**
     * Starts a proxy to {@code host:port} on a free local port.
     *
     * @param host the server's host
     * @param port the server's port
     * @return the running proxy
     * @throws IOException when no local port can be opened
     */
    public static TcpProxy to(String host, int port) throws IOException {
        return new TcpProxy(host, port);
    }

    /**
     * Starts a proxy to the server of a PostgreSQL JDBC URL ({@code jdbc:postgresql://host:port/db...}).
     *
     * @param jdbcUrl the URL whose server to proxy
     * @return the running proxy
     * @throws IOException when no local port can be opened
     */
    public static TcpProxy toServerOf(String jdbcUrl) throws IOException {
        String rest = jdbcUrl.substring(jdbcUrl.indexOf("//") + 2);
        String hostPort = rest.substring(0, rest.indexOf('/'));
        int colon = hostPort.lastIndexOf(':');
        return colon < 0
                ? to(hostPort, 5432)
                : to(hostPort.substring(0, colon), Integer.parseInt(hostPort.substring(colon + 1)));
    }

    /**
     * Returns {@code jdbcUrl} pointing at this proxy instead of its server.
     *
     * @param jdbcUrl a URL of the proxied server
     * @return the same URL through the proxy
     */
    public String jdbcUrl(String jdbcUrl) {
        String rest = jdbcUrl.substring(jdbcUrl.indexOf("//") + 2);
        return "jdbc:postgresql://" + InetAddress.getLoopbackAddress().getHostAddress() + ":" + port()
                + rest.substring(rest.indexOf('/'));
    }

    /**
     * Returns the local port clients connect to.
     *
     * @return the port
     */
    public int port() {
        return server.getLocalPort();
    }

    /** Cuts the network silently: nothing is forwarded, nothing is closed, until {@link #heal()}. */
    public void blackhole() {
        synchronized (gate) {
            cut = true;
        }
    }

    /** Forwards again, what was held back first. */
    public void heal() {
        synchronized (gate) {
            cut = false;
            gate.notifyAll();
        }
    }

    /** Closes every connection (the peers see them close) and stops accepting. */
    @Override
    public void close() {
        closed = true;
        heal();
        closeQuietly(server);
        sockets.forEach(TcpProxy::closeQuietly);
    }

    private void awaitOpen() throws InterruptedException {
        synchronized (gate) {
            while (cut && !closed) {
                gate.wait();
            }
        }
    }

    private void accept() {
        while (!closed) {
            try {
                Socket client = server.accept();
                sockets.add(client);
                Thread.ofVirtual().name("tcp-proxy-connect").start(() -> connect(client));
            } catch (IOException e) {
                if (!closed) {
                    continue;
                }
                return;
            }
        }
    }

    private void connect(Socket client) {
        try {
            awaitOpen(); // a partition lets no new connection through either
            Socket upstream = new Socket(host, port);
            sockets.add(upstream);
            Thread.ofVirtual().name("tcp-proxy-up").start(() -> pump(client, upstream));
            Thread.ofVirtual().name("tcp-proxy-down").start(() -> pump(upstream, client));
        } catch (IOException | InterruptedException e) {
            closeQuietly(client);
        }
    }

    /** Copies bytes from one socket to the other, holding them while the network is cut. */
    private void pump(Socket from, Socket to) {
        byte[] buffer = new byte[16 * 1024];
        try (InputStream in = from.getInputStream()) {
            OutputStream out = to.getOutputStream();
            while (true) {
                awaitOpen();
                int n = in.read(buffer);
                awaitOpen(); // read just before the cut: held until the heal
                if (n < 0) {
                    break;
                }
                out.write(buffer, 0, n);
                out.flush();
            }
        } catch (IOException | InterruptedException e) {
            // one side closed or broke: close the other
        } finally {
            closeQuietly(from);
            closeQuietly(to);
        }
    }

    private static void closeQuietly(AutoCloseable c) {
        try {
            c.close();
        } catch (Exception ignored) {
            // already closed
        }
    }
}
