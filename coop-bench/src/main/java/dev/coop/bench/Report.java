package dev.coop.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The results: a JSON document (everything, every run) and a human table (medians, ratios, targets). */
final class Report {
    record Row(String workload, String metric, String median, String spread, String ratio, String target,
            String met) {
    }

    final Map<String, Object> json = new LinkedHashMap<>();
    final Map<String, Object> workloads = new LinkedHashMap<>();
    private final List<Row> rows = new ArrayList<>();
    /** Tables of their own (Markdown), printed before the rows: the side-by-side comparison, the A/B runs. */
    private final List<String> extras = new ArrayList<>();

    void extra(String markdown) {
        extras.add(markdown);
    }

    Report() {
        json.put("workloads", workloads);
    }

    /** A row with the median over runs of {@code key}, its spread, and optionally a ratio and a target. */
    void row(String workload, String metric, Runs runs, String key, String ratioKey, String target,
            Boolean met) {
        rows.add(new Row(workload, metric, fmt(runs.median(key)), runs.spread(key),
                ratioKey == null ? "" : fmt(runs.median(ratioKey)), target == null ? "" : target,
                met == null ? "" : met ? "yes" : "NO"));
    }

    void row(String workload, String metric, double value, String target, Boolean met) {
        rows.add(new Row(workload, metric, fmt(value), "", "", target == null ? "" : target,
                met == null ? "" : met ? "yes" : "NO"));
    }

    void text(String workload, String metric, String value) {
        rows.add(new Row(workload, metric, value, "", "", "", ""));
    }

    List<Row> rows() {
        return rows;
    }

    static String fmt(double v) {
        if (Double.isNaN(v)) {
            return "-";
        }
        double a = Math.abs(v);
        if (a >= 1000) {
            return String.format(Locale.ROOT, "%,.0f", v);
        }
        if (a >= 100) {
            return String.format(Locale.ROOT, "%.1f", v);
        }
        if (a >= 1) {
            return String.format(Locale.ROOT, "%.2f", v);
        }
        return String.format(Locale.ROOT, "%.3f", v);
    }

    String table() {
        String[] head = {"Workload", "Metric", "Median", "Runs min..max", "vs phys", "Target", "Met"};
        int[] w = new int[head.length];
        for (int i = 0; i < head.length; i++) {
            w[i] = head[i].length();
        }
        for (Row r : rows) {
            String[] c = cells(r);
            for (int i = 0; i < c.length; i++) {
                w[i] = Math.max(w[i], c[i].length());
            }
        }
        StringBuilder sb = new StringBuilder();
        line(sb, head, w);
        StringBuilder sep = new StringBuilder();
        for (int x : w) {
            sep.append("-".repeat(x)).append("  ");
        }
        sb.append(sep.toString().stripTrailing()).append('\n');
        String last = null;
        for (Row r : rows) {
            String[] c = cells(r);
            if (r.workload.equals(last)) {
                c[0] = "";
            }
            last = r.workload;
            line(sb, c, w);
        }
        return extras.isEmpty() ? sb.toString() : String.join("\n\n", extras) + "\n\n" + sb;
    }

    /** The table as Markdown, for docs/performance.md. */
    String markdown() {
        StringBuilder sb = new StringBuilder(
                "| Workload | Metric | Median | Runs min..max | vs phys | Target | Met |\n|---|---|---:|---:|---:|---|---|\n");
        String last = null;
        for (Row r : rows) {
            String[] c = cells(r);
            if (r.workload.equals(last)) {
                c[0] = "";
            }
            last = r.workload;
            sb.append("| ").append(String.join(" | ", c)).append(" |\n");
        }
        return extras.isEmpty() ? sb.toString() : String.join("\n\n", extras) + "\n\n" + sb;
    }

    private static String[] cells(Row r) {
        return new String[]{r.workload, r.metric, r.median, r.spread, r.ratio, r.target, r.met};
    }

    private static void line(StringBuilder sb, String[] c, int[] w) {
        StringBuilder l = new StringBuilder();
        for (int i = 0; i < c.length; i++) {
            String s = c[i];
            boolean right = i == 2 || i == 3 || i == 4;
            l.append(right ? " ".repeat(w[i] - s.length()) + s : s + " ".repeat(w[i] - s.length())).append("  ");
        }
        sb.append(l.toString().stripTrailing()).append('\n');
    }

    Path write(Path dir, String stamp) {
        try {
            Files.createDirectories(dir);
            json.put("table", rows.stream().map(r -> {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("workload", r.workload);
                m.put("metric", r.metric);
                m.put("median", r.median);
                m.put("spread", r.spread);
                m.put("ratioToPhysicalLimit", r.ratio);
                m.put("target", r.target);
                m.put("met", r.met);
                return m;
            }).toList());
            ObjectMapper mapper = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
            Path file = dir.resolve("bench-" + stamp + ".json");
            mapper.writeValue(file.toFile(), json);
            Files.writeString(dir.resolve("bench-" + stamp + ".md"), markdown());
            return file;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
