package dev.coop.bench;

import java.util.Arrays;
import java.util.List;

/** Percentiles (nearest rank), medians and rounding. */
final class Stats {
    private Stats() {
    }

    /** Nearest-rank percentile of sorted values; 0 when empty. */
    static long percentile(long[] sorted, double p) {
        if (sorted.length == 0) {
            return 0;
        }
        int rank = (int) Math.ceil(p / 100.0 * sorted.length);
        return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
    }

    static long[] sorted(long[] values) {
        long[] s = values.clone();
        Arrays.sort(s);
        return s;
    }

    static double median(List<Double> values) {
        if (values.isEmpty()) {
            return Double.NaN;
        }
        double[] v = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        int n = v.length;
        return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    }

    static double ms(long nanos) {
        return round(nanos / 1e6, 3);
    }

    static double round(double v, int digits) {
        if (Double.isNaN(v) || Double.isInfinite(v)) {
            return v;
        }
        double f = Math.pow(10, digits);
        return Math.round(v * f) / f;
    }
}
