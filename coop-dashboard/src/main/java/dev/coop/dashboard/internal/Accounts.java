package dev.coop.dashboard.internal;

import dev.coop.dashboard.Role;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The standalone dashboard's users and tokens. Secrets are kept as SHA-256 digests and compared in constant time;
 * they come from the operator's configuration (environment or command line), not from a user database.
 */
public final class Accounts {
    private record Account(String name, byte[] digest, Role role) {
    }

    private final Map<String, Account> users = new LinkedHashMap<>();
    private final List<Account> tokens = new ArrayList<>();

    public void user(String name, String password, Role role) {
        if (name == null || !name.matches("[A-Za-z0-9._@-]{1,100}")) {
            throw new IllegalArgumentException("A dashboard user name is 1 to 100 letters, digits or . _ @ -, was '"
                    + name + "'");
        }
        if (password == null || password.length() < 8) {
            throw new IllegalArgumentException("The password of dashboard user '" + name
                    + "' must have at least 8 characters");
        }
        users.put(name, new Account(name, digest(password), role));
    }

    public void token(String token, Role role) {
        if (token == null || token.length() < 16) {
            throw new IllegalArgumentException("A dashboard token must have at least 16 characters");
        }
        tokens.add(new Account("token-" + (tokens.size() + 1), digest(token), role));
    }

    public boolean isEmpty() {
        return users.isEmpty() && tokens.isEmpty();
    }

    /** The user with this password, or null. */
    public Caller password(String name, String password) {
        Account a = name == null ? null : users.get(name);
        byte[] given = digest(password == null ? "" : password);
        if (a == null || !MessageDigest.isEqual(a.digest(), given)) {
            return null;
        }
        return new Caller(a.name(), a.role(), null);
    }

    /** The holder of this token, or null. */
    public Caller token(String token) {
        if (token == null || token.isEmpty()) {
            return null;
        }
        byte[] given = digest(token);
        Caller found = null;
        for (Account a : tokens) { // all compared, in constant time each
            if (MessageDigest.isEqual(a.digest(), given)) {
                found = new Caller(a.name(), a.role(), null);
            }
        }
        return found;
    }

    /** From {@code Authorization: Bearer <token>} or {@code Basic <user:password>}; null when neither matches. */
    public Caller authorization(String header) {
        if (header == null) {
            return null;
        }
        if (header.regionMatches(true, 0, "Bearer ", 0, 7)) {
            return token(header.substring(7).strip());
        }
        if (header.regionMatches(true, 0, "Basic ", 0, 6)) {
            try {
                String pair = new String(Base64.getDecoder().decode(header.substring(6).strip()),
                        StandardCharsets.UTF_8);
                int colon = pair.indexOf(':');
                return colon < 0 ? null : password(pair.substring(0, colon), pair.substring(colon + 1));
            } catch (IllegalArgumentException e) {
                return null;
            }
        }
        return null;
    }

    /** The user name of {@code Basic} credentials (to throttle its failures), or null. */
    public static String basicUser(String header) {
        if (header == null || !header.regionMatches(true, 0, "Basic ", 0, 6)) {
            return null;
        }
        try {
            String pair = new String(Base64.getDecoder().decode(header.substring(6).strip()), StandardCharsets.UTF_8);
            int colon = pair.indexOf(':');
            return colon < 0 ? null : pair.substring(0, colon);
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    private static byte[] digest(String secret) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(secret.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
