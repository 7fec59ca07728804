package dev.coop.dashboard.internal;

import java.io.IOException;

/** One HTTP request and its response, as the standalone server and the servlet adapter both see it. */
public interface Exchange {
    String method();

    /** The path below the dashboard's root, starting with {@code /}. */
    String path();

    /** A query parameter, decoded; null when absent. */
    String query(String name);

    /** The client's IP address as the connection shows it (a proxy's, behind one). */
    String remoteAddress();

    /** A request header; null when absent. */
    String header(String name);

    /** The request body, refused when longer than {@code max} bytes. */
    byte[] body(int max) throws IOException;

    /** Sets a response header (before {@link #send}). */
    void responseHeader(String name, String value);

    void send(int status, String contentType, byte[] body) throws IOException;
}
