package dev.coop.bench;

import dev.coop.CooperationContext;
import dev.coop.EngineListener;
import dev.coop.StepContext;
import dev.coop.micrometer.CoopMetrics;
import dev.coop.opentelemetry.CoopTracing;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.BatchSpanProcessor;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The cost of observing: W1 (32 client threads) without listeners and with Micrometer metrics and OpenTelemetry
 * tracing (a real SDK, every span sampled and batched to an exporter that counts and drops them), runs of the two
 * variants interleaved so that drift of a shared machine hits both alike.
 */
final class Observed {
    private static final int THREADS = 32;

    private Observed() {
    }

    static void run(Options o, Report report) {
        Runs plain = new Runs("observed/plain");
        Runs observed = new Runs("observed/metrics+tracing");
        AtomicLong exported = new AtomicLong();
        int total = o.warmups + o.runs;
        for (int i = 0; i < total; i++) {
            boolean warm = i < o.warmups;
            // alternate which variant goes first, so neither always runs on a warmer machine
            for (int v = 0; v < 2; v++) {
                boolean withListeners = (i + v) % 2 == 1;
                Map<String, Object> m = once(o, withListeners, "r" + i + (withListeners ? "o" : "p"), exported);
                (withListeners ? observed : plain).add(m, warm, warm ? "warm-up" : "run " + (i - o.warmups + 1));
            }
        }
        String name = "W1 " + o.w1Sagas + " sagas x 3 steps, " + THREADS + " threads";
        report.row(name + ", no listeners", "steps/s", plain, "stepsPerSec", null, null, null);
        report.row(name + ", metrics + tracing", "steps/s", observed, "stepsPerSec", null, null, null);
        double cost = 1 - observed.median("stepsPerSec") / plain.median("stepsPerSec");
        report.row(name, "throughput cost of metrics + tracing", Stats.round(cost * 100, 1), "< 5 %", cost < 0.05);
        report.row(name + ", no listeners", "CPU us/step, engine threads", plain, "engineCpuUsPerStep", null, null,
                null);
        report.row(name + ", metrics + tracing", "CPU us/step, engine threads", observed, "engineCpuUsPerStep", null,
                null, null);
        double isolated = isolatedNanosPerStep(o);
        report.row(name, "listener CPU ns/step in isolation (metrics + tracing, 1 launch per 3 steps)", isolated, null,
                null);
        report.row(name, "  as share of engine CPU per step without listeners",
                Stats.round(isolated / 1e3 / plain.median("engineCpuUsPerStep") * 100, 2), "< 5 %",
                isolated / 1e3 / plain.median("engineCpuUsPerStep") < 0.05);
        report.workloads.put("observed", Map.of("plain", plain.toMap(), "metricsAndTracing", observed.toMap(),
                "costPercent", Stats.round(cost * 100, 1), "spansExported", exported.get(),
                "isolatedListenerNanosPerStep", isolated));
    }

    private static Map<String, Object> once(Options o, boolean withListeners, String tag, AtomicLong exported) {
        try (RunEnv env = RunEnv.fresh(o, "observed", true)) {
            if (!withListeners) {
                return env.bracket(Throughput.w1(o, env.db, env.pool, env.physTxPerSec, o.w1Sagas, THREADS, tag, 0,
                        List.of()));
            }
            SdkTracerProvider tracer = SdkTracerProvider.builder()
                    .addSpanProcessor(BatchSpanProcessor.builder(new Counting(exported)).build()).build();
            try (OpenTelemetrySdk otel = OpenTelemetrySdk.builder().setTracerProvider(tracer).build()) {
                // -Dbench.observed=metrics or =tracing measures one of the two alone
                String only = System.getProperty("bench.observed", "both");
                List<EngineListener> listeners = switch (only) {
                    case "metrics" -> List.of(new CoopMetrics(new SimpleMeterRegistry()));
                    case "tracing" -> List.of(new CoopTracing(otel));
                    default -> List.of(new CoopMetrics(new SimpleMeterRegistry()), new CoopTracing(otel));
                };
                return env.bracket(Throughput.w1(o, env.db, env.pool, env.physTxPerSec, o.w1Sagas, THREADS, tag, 0,
                        listeners));
            }
        } catch (Exception e) {
            throw new IllegalStateException("observed run " + tag + " failed: " + e, e);
        }
    }

    /**
     * What the listeners cost per step on their own, free of the database and of a shared machine's noise: the calls
     * an engine makes for one W1 step (start and end of the step, a claim) plus a third of a client launch, on a real
     * step context captured from a run, with the same SDK setup; the median of several timed rounds.
     */
    private static double isolatedNanosPerStep(Options o) {
        StepContext<?>[] captured = new StepContext<?>[1];
        EngineListener capture = new EngineListener() {
            @Override
            public Object stepStarted(StepContext<?> step, Part part) {
                captured[0] = step;
                return null;
            }
        };
        try (RunEnv env = RunEnv.fresh(o, "observed_capture", true)) {
            Throughput.w1(o, env.db, env.pool, env.physTxPerSec, 10, 1, "capture", 0, List.of(capture));
        } catch (Exception e) {
            throw new IllegalStateException("capturing a step context failed: " + e, e);
        }
        StepContext<?> step = captured[0];
        AtomicLong exported = new AtomicLong();
        SdkTracerProvider tracer = SdkTracerProvider.builder()
                .addSpanProcessor(BatchSpanProcessor.builder(new Counting(exported)).build()).build();
        try (OpenTelemetrySdk otel = OpenTelemetrySdk.builder().setTracerProvider(tracer).build()) {
            CoopMetrics metrics = new CoopMetrics(new SimpleMeterRegistry());
            CoopTracing tracing = new CoopTracing(otel);
            CooperationContext empty = CooperationContext.empty();
            java.time.Duration waited = java.time.Duration.ofMillis(3);
            int perRound = 30_000;
            List<Double> rounds = new java.util.ArrayList<>();
            for (int round = 0; round < 13; round++) {
                long start = System.nanoTime();
                for (int i = 0; i < perRound; i++) {
                    metrics.claimed("w1", waited);
                    Object state = tracing.stepStarted(step, EngineListener.Part.STEP);
                    tracing.stepEnded(step, EngineListener.Part.STEP, state, EngineListener.Outcome.COMMITTED, 1000,
                            null);
                    metrics.stepEnded(step, EngineListener.Part.STEP, null, EngineListener.Outcome.COMMITTED, 1000,
                            null);
                    if (i % 3 == 0) {
                        tracing.launching("w1", metrics.launching("w1", empty));
                    }
                }
                if (round >= 3) { // the first rounds warm the JIT up
                    rounds.add((System.nanoTime() - start) / (double) perRound);
                }
            }
            return Stats.round(Stats.median(rounds), 0);
        }
    }

    /** Counts the spans it is given and drops them. */
    private record Counting(AtomicLong count) implements SpanExporter {
        @Override
        public CompletableResultCode export(Collection<SpanData> spans) {
            count.addAndGet(spans.size());
            return CompletableResultCode.ofSuccess();
        }

        @Override
        public CompletableResultCode flush() {
            return CompletableResultCode.ofSuccess();
        }

        @Override
        public CompletableResultCode shutdown() {
            return CompletableResultCode.ofSuccess();
        }
    }
}
