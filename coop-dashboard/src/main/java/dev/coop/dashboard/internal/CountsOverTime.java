package dev.coop.dashboard.internal;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.coop.CoopClient;
import dev.coop.inspect.RunCount;
import java.time.Duration;

/**
 * {@code api/counts?minutes=<n>}: runs launched, committed, rolled back, failed to roll back and parked per saga and
 * minute over the last {@code n} minutes (default 180, at most 7 days), from {@link CoopClient#counts}.
 */
final class CountsOverTime {
    static final long DEFAULT_MINUTES = 180;
    static final long MAX_MINUTES = Duration.ofDays(7).toMinutes();

    private final CoopClient client;
    private final ObjectMapper mapper;

    CountsOverTime(CoopClient client, ObjectMapper mapper) {
        this.client = client;
        this.mapper = mapper;
    }

    ObjectNode read(Exchange ex) {
        long minutes = Params.integer(ex, "minutes", DEFAULT_MINUTES, 1, MAX_MINUTES);
        ObjectNode o = mapper.createObjectNode();
        o.put("minutes", minutes);
        o.put("now", client.now().toString());
        ArrayNode rows = o.putArray("counts");
        for (RunCount n : client.counts(Duration.ofMinutes(minutes))) {
            ObjectNode r = rows.addObject();
            r.put("saga", n.saga());
            r.put("minute", n.minute().toString());
            r.put("launched", n.launched());
            r.put("committed", n.committed());
            r.put("rolledBack", n.rolledBack());
            r.put("rollbackFailed", n.rollbackFailed());
            r.put("parked", n.parked());
        }
        return o;
    }
}
