package dev.coop.dashboard.internal;

import dev.coop.dashboard.Role;

/**
 * Who makes a request, as the adapter authenticated it.
 *
 * @param csrf the token a state-changing request must echo in {@value Handler#CSRF_HEADER}; null when the caller
 *        did not authenticate with a cookie (a bearer token or basic credentials sent by a script), so a forged
 *        cross-site request cannot carry its credentials
 */
public record Caller(String name, Role role, String csrf) {
}
