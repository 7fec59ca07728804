package dev.coop.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The runs of one workload variant: one warm-up (kept in the JSON, left out of medians) and the measured runs.
 * Medians are taken per metric.
 */
final class Runs {
    interface Body {
        Map<String, Object> run(int index, boolean warmup) throws Exception;
    }

    final String name;
    final List<Map<String, Object>> warmups = new ArrayList<>();
    final List<Map<String, Object>> measured = new ArrayList<>();

    Runs(String name) {
        this.name = name;
    }

    static Runs repeat(String name, int warmups, int runs, Body body) {
        Runs r = new Runs(name);
        int total = warmups + runs;
        for (int i = 0; i < total; i++) {
            boolean warm = i < warmups;
            long start = System.nanoTime();
            Map<String, Object> m;
            try {
                m = body.run(i, warm);
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new IllegalStateException(name + " run " + i + " failed: " + e, e);
            }
            m.put("wallSeconds", Stats.round((System.nanoTime() - start) / 1e9, 1));
            (warm ? r.warmups : r.measured).add(m);
            Bench.progress(name + (warm ? " warm-up" : " run " + (i - warmups + 1) + "/" + runs) + ": "
                    + summary(m));
        }
        return r;
    }

    /** Records a run made outside {@link #repeat} (runs of two variants interleaved). */
    void add(Map<String, Object> m, boolean warm, String label) {
        (warm ? warmups : measured).add(m);
        Bench.progress(name + " " + label + ": " + summary(m));
    }

    static String summary(Map<String, Object> m) {
        StringBuilder sb = new StringBuilder();
        int n = 0;
        for (Map.Entry<String, Object> e : m.entrySet()) {
            if (e.getValue() instanceof Number num && n < 7) {
                sb.append(e.getKey()).append('=').append(Report.fmt(num.doubleValue())).append(' ');
                n++;
            }
        }
        return sb.toString().strip();
    }

    double median(String key) {
        List<Double> v = new ArrayList<>();
        for (Map<String, Object> m : measured) {
            Object o = m.get(key);
            if (o instanceof Number n) {
                v.add(n.doubleValue());
            }
        }
        return Stats.median(v);
    }

    String spread(String key) {
        double min = Double.MAX_VALUE;
        double max = -Double.MAX_VALUE;
        int n = 0;
        for (Map<String, Object> m : measured) {
            if (m.get(key) instanceof Number num) {
                min = Math.min(min, num.doubleValue());
                max = Math.max(max, num.doubleValue());
                n++;
            }
        }
        if (n < 2) {
            return "";
        }
        return Report.fmt(min) + ".." + Report.fmt(max);
    }

    /** For the JSON: every run and the median of every numeric metric. */
    Map<String, Object> toMap() {
        Map<String, Object> out = new LinkedHashMap<>();
        Map<String, Object> medians = new LinkedHashMap<>();
        if (!measured.isEmpty()) {
            for (Map.Entry<String, Object> e : measured.getFirst().entrySet()) {
                if (e.getValue() instanceof Number) {
                    medians.put(e.getKey(), Stats.round(median(e.getKey()), 4));
                }
            }
        }
        out.put("median", medians);
        out.put("runs", measured);
        out.put("warmups", warmups);
        return out;
    }
}
