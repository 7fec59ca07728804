package dev.coop.opentelemetry;

import dev.coop.CooperationContext;
import dev.coop.EngineListener;
import dev.coop.StepContext;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.context.propagation.TextMapSetter;
import java.util.List;
import java.util.Objects;

/**
 * Traces for OpenTelemetry: register it as an engine's (and client's) listener. Each execution of step code is a span
 * ({@code "<saga> <step>"}; a compensation is {@code "compensate <saga> <step>"}), current while the code runs, so
 * the spans of the code's own calls (JDBC, HTTP) nest under it. Every launched message carries the W3C
 * {@code traceparent} of the span that launched it in the context entry {@value EngineListener#TRACE_PARENT}: the
 * runs it causes, in any engine, continue that trace, and a launch from a traced request continues the request's.
 * A launch outside any span starts a trace with a short {@code "launch <topic>"} span.
 */
public final class CoopTracing implements EngineListener {
    static final AttributeKey<String> SAGA = AttributeKey.stringKey("coop.saga");
    static final AttributeKey<String> STEP = AttributeKey.stringKey("coop.step");
    static final AttributeKey<String> PART = AttributeKey.stringKey("coop.part");
    static final AttributeKey<Long> ITERATION = AttributeKey.longKey("coop.iteration");
    static final AttributeKey<Long> ATTEMPT = AttributeKey.longKey("coop.attempt");
    static final AttributeKey<String> RUN_ID = AttributeKey.stringKey("coop.run_id");
    static final AttributeKey<String> MESSAGE_ID = AttributeKey.stringKey("coop.message_id");
    static final AttributeKey<String> OUTCOME = AttributeKey.stringKey("coop.outcome");
    static final AttributeKey<String> TOPIC = AttributeKey.stringKey("coop.topic");
    private static final String TRACEPARENT = "traceparent";

    private final Tracer tracer;
    private final W3CTraceContextPropagator propagator = W3CTraceContextPropagator.getInstance();

    public CoopTracing(OpenTelemetry openTelemetry) {
        this.tracer = Objects.requireNonNull(openTelemetry, "openTelemetry").getTracer("dev.coop");
    }

    private record Started(Span span, Scope scope) {
    }

    @Override
    public Object stepStarted(StepContext<?> step, Part part) {
        Context parent = parentOf(step.context());
        String name = (part == Part.COMPENSATION ? "compensate " : "") + step.saga() + " " + step.step();
        Span span = tracer.spanBuilder(name).setParent(parent).setSpanKind(SpanKind.CONSUMER)
                .setAttribute(SAGA, step.saga()).setAttribute(STEP, step.step())
                .setAttribute(PART, part.name().toLowerCase())
                .setAttribute(ITERATION, (long) step.iteration()).setAttribute(ATTEMPT, (long) step.attempt())
                .setAttribute(RUN_ID, step.runId().toString())
                .setAttribute(MESSAGE_ID, step.messageId().value().toString()).startSpan();
        return new Started(span, span.makeCurrent());
    }

    @Override
    public void stepEnded(StepContext<?> step, Part part, Object state, Outcome outcome, long nanos,
            Throwable failure) {
        if (!(state instanceof Started started)) {
            return;
        }
        try {
            started.span().setAttribute(OUTCOME, outcome.name().toLowerCase());
            if (failure != null) {
                started.span().recordException(failure);
                if (outcome != Outcome.COMMITTED) {
                    started.span().setStatus(StatusCode.ERROR, failure.toString());
                }
            }
        } finally {
            started.scope().close();
            started.span().end();
        }
    }

    @Override
    public CooperationContext launching(String topic, CooperationContext context) {
        Span current = Span.current();
        if (current.getSpanContext().isValid()) {
            return withTraceparent(context, Context.current());
        }
        Span launch = tracer.spanBuilder("launch " + topic).setSpanKind(SpanKind.PRODUCER).setParent(Context.root())
                .setAttribute(TOPIC, topic).startSpan();
        try {
            return withTraceparent(context, Context.root().with(launch));
        } finally {
            launch.end();
        }
    }

    private CooperationContext withTraceparent(CooperationContext context, Context trace) {
        String[] value = new String[1];
        propagator.inject(trace, value, SETTER);
        if (value[0] == null) {
            return context;
        }
        return context.withRawJson(EngineListener.TRACE_PARENT, "\"" + value[0] + "\"");
    }

    private Context parentOf(CooperationContext context) {
        String json = context.rawJson(EngineListener.TRACE_PARENT).orElse(null);
        if (json == null || json.length() < 2 || json.charAt(0) != '"') {
            return Context.root();
        }
        return propagator.extract(Context.root(), json.substring(1, json.length() - 1), GETTER);
    }

    private static final TextMapSetter<String[]> SETTER = (carrier, key, value) -> {
        if (carrier != null && TRACEPARENT.equals(key)) {
            carrier[0] = value;
        }
    };

    private static final TextMapGetter<String> GETTER = new TextMapGetter<>() {
        @Override
        public Iterable<String> keys(String carrier) {
            return List.of(TRACEPARENT);
        }

        @Override
        public String get(String carrier, String key) {
            return TRACEPARENT.equals(key) ? carrier : null;
        }
    };
}
