package dev.coop.internal.store;

/**
 * What the counts over time ({@code run_count}, read by {@link dev.coop.internal.read.RunCountRollup}) need written,
 * since schema version 27 derives the rest from the run rows when read: the outcomes a run row no longer shows. A
 * committed run asked to roll back (a compensation, an operator's rollback) keeps no trace of its commit in its row
 * once it rolled back, so the statement that asks it writes the commit into {@code run_count}, in the minute of the
 * run's {@code finished_at} as it was, in the writing backend's shard. Only the compensation and operator paths pay.
 */
public final class Counts {
    private Counts() {
    }

    /**
     * A CTE {@code name} (data-modifying: it runs whether read or not) that counts the commits of {@code rows} (a CTE
     * or table expression with {@code saga} and {@code committed_at}, the commit's {@code finished_at}) in
     * {@code run_count}.
     */
    public static String supersededCommits(String name, String rows) {
        return name + " AS ( -- the commits their rows no longer show (counts over time, schema version 27)\n"
                + "  INSERT INTO {schema}.run_count AS c (minute, saga, shard, committed)\n"
                + "  SELECT date_trunc('minute', w.committed_at), w.saga, pg_backend_pid(), count(*) FROM " + rows
                + " w\n   WHERE w.committed_at IS NOT NULL AND left(w.saga, 1) <> '~' GROUP BY 1, 2\n"
                + "  ON CONFLICT (minute, saga, shard) DO UPDATE SET committed = c.committed + EXCLUDED.committed\n)";
    }
}
