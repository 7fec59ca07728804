package dev.coop.dashboard.internal;

import java.nio.ByteBuffer;
import java.util.Map;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

/**
 * {@link Exchange} over Jetty's core request and response. The body, if any, was read before (without a thread
 * waiting for it, see {@link StandaloneServer}); the response is written asynchronously and completes Jetty's
 * callback, so a client that reads its answer slowly holds no thread either.
 */
final class JettyExchange implements Exchange {
    private final Request request;
    private final Response response;
    private final Callback callback;
    private final byte[] body;
    private final Map<String, String> query;
    private boolean sent;

    JettyExchange(Request request, Response response, Callback callback, byte[] body) {
        this.request = request;
        this.response = response;
        this.callback = callback;
        this.body = body;
        this.query = Forms.parse(request.getHttpURI().getQuery());
    }

    @Override
    public String method() {
        return request.getMethod();
    }

    @Override
    public String path() {
        String p = request.getHttpURI().getDecodedPath();
        return p == null || p.isEmpty() ? "/" : p;
    }

    @Override
    public String query(String name) {
        return query.get(name);
    }

    @Override
    public String remoteAddress() {
        return Request.getRemoteAddr(request);
    }

    @Override
    public String header(String name) {
        return request.getHeaders().get(name);
    }

    @Override
    public byte[] body(int max) {
        if (body.length > max) {
            throw Handler.tooLarge(max);
        }
        return body;
    }

    @Override
    public void responseHeader(String name, String value) {
        response.getHeaders().add(name, value);
    }

    @Override
    public void send(int status, String contentType, byte[] content) {
        if (sent) {
            throw new IllegalStateException("A dashboard response was sent twice");
        }
        sent = true;
        response.setStatus(status);
        response.getHeaders().put(HttpHeader.CONTENT_TYPE, contentType);
        response.getHeaders().put(HttpHeader.CONTENT_LENGTH, content.length);
        response.write(true, ByteBuffer.wrap(content), callback); // Jetty sends no body to a HEAD request
    }

    boolean sent() {
        return sent;
    }
}
