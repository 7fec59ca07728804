package dev.coop.dashboard.internal;

import java.security.SecureRandom;
import java.time.Duration;
import java.util.Base64;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** Cookie sessions of the standalone dashboard: a random id per login, each with its own CSRF token. */
public final class Sessions {
    public static final String COOKIE = "coop_dashboard";
    private static final int MAX = 10_000;
    private static final SecureRandom RANDOM = new SecureRandom();

    private record Session(Caller caller, long expiresAt) {
    }

    private final Map<String, Session> sessions = new ConcurrentHashMap<>();
    private final long idleNanos;

    public Sessions(Duration idle) {
        this.idleNanos = idle.toNanos();
    }

    /** A new session for the caller; returns its id (the cookie's value). */
    public String open(Caller who) {
        if (sessions.size() >= MAX) {
            expire();
        }
        String id = random();
        sessions.put(id, new Session(new Caller(who.name(), who.role(), random()), System.nanoTime() + idleNanos));
        return id;
    }

    /** The caller of a live session (with its CSRF token), or null; each use extends it. */
    public Caller find(String id) {
        if (id == null) {
            return null;
        }
        Session s = sessions.get(id);
        if (s == null) {
            return null;
        }
        long now = System.nanoTime();
        if (now - s.expiresAt() > 0) {
            sessions.remove(id);
            return null;
        }
        sessions.put(id, new Session(s.caller(), now + idleNanos));
        return s.caller();
    }

    public void close(String id) {
        if (id != null) {
            sessions.remove(id);
        }
    }

    private void expire() {
        long now = System.nanoTime();
        for (Iterator<Session> it = sessions.values().iterator(); it.hasNext();) {
            if (now - it.next().expiresAt() > 0) {
                it.remove();
            }
        }
        if (sessions.size() >= MAX) {
            throw new IllegalStateException("Too many dashboard sessions (" + MAX + "); try again later");
        }
    }

    public static String random() {
        byte[] b = new byte[32];
        RANDOM.nextBytes(b);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(b);
    }

    /** The value of a cookie in a {@code Cookie} header, or null. */
    public static String cookie(String header, String name) {
        if (header == null) {
            return null;
        }
        for (String part : header.split(";")) {
            String p = part.strip();
            if (p.startsWith(name + "=")) {
                return p.substring(name.length() + 1);
            }
        }
        return null;
    }
}
