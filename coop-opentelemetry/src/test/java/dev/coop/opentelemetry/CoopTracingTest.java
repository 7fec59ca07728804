package dev.coop.opentelemetry;

import static org.assertj.core.api.Assertions.assertThat;

import dev.coop.Coop;
import dev.coop.CoopEngine;
import dev.coop.EngineListener;
import dev.coop.MessageId;
import dev.coop.Saga;
import dev.coop.Topic;
import dev.coop.inspect.Outcome;
import dev.coop.test.CoopDatabase;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import dev.coop.test.Await;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** One trace shows a whole hierarchy whose runs execute in two engines (as in two services), begun by a request. */
class CoopTracingTest {
    @RegisterExtension
    static final CoopDatabase db = new CoopDatabase();

    record Order(String id) {
    }

    record Charge(String id) {
    }

    static final Topic<Order> ORDERS = Topic.of("tracing.orders", Order.class);
    static final Topic<Charge> CHARGES = Topic.of("tracing.charges", Charge.class);
    static final Topic<Order> SOLO = Topic.of("tracing.solo", Order.class);

    private final InMemorySpanExporter spans = InMemorySpanExporter.create();
    private final OpenTelemetrySdk otel = OpenTelemetrySdk.builder()
            .setTracerProvider(SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(spans)).build())
            .build();

    @AfterEach
    void close() {
        otel.close();
    }

    @Test
    void oneTraceAcrossTwoEnginesContinuingTheRequest(DataSource dataSource) {
        Saga<Order> order = Saga.on(ORDERS, "order")
                .step("reserve", step -> step.launch(CHARGES, new Charge(step.payload().id())))
                .compensateWith((step, cause) -> {
                })
                .step("confirm", step -> {
                })
                .build();
        Saga<Charge> payment = Saga.on(CHARGES, "payment").step("charge", step -> {
            throw new IllegalStateException("card declined");
        }).build();
        CoopTracing tracing = new CoopTracing(otel);
        try (CoopEngine orders = Coop.engine(dataSource).name("orders").workers(2).register(order).listener(tracing)
                .start();
                CoopEngine payments = Coop.engine(dataSource).name("payments").workers(2).register(payment)
                        .listener(tracing).start()) {
            Span request = otel.getTracer("test").spanBuilder("POST /orders").setSpanKind(SpanKind.SERVER)
                    .startSpan();
            MessageId message;
            try (Scope ignored = request.makeCurrent()) {
                message = orders.client().launch(ORDERS, new Order("o-1"));
            } finally {
                request.end();
            }
            assertThat(orders.client().awaitCompletion(message, Duration.ofSeconds(30)))
                    .isEqualTo(Outcome.ROLLED_BACK);
            Await.until("the compensation's span", Duration.ofSeconds(10),
                    () -> spans.getFinishedSpanItems().stream().anyMatch(s -> s.getName().startsWith("compensate")));

            List<SpanData> all = spans.getFinishedSpanItems();
            assertThat(all).extracting(SpanData::getTraceId).containsOnly(request.getSpanContext().getTraceId());
            Map<String, SpanData> byName = all.stream()
                    .collect(Collectors.toMap(SpanData::getName, Function.identity(), (a, b) -> a));
            SpanData reserve = byName.get("order reserve");
            SpanData charge = byName.get("payment charge");
            assertThat(reserve.getParentSpanId()).isEqualTo(request.getSpanContext().getSpanId());
            assertThat(charge.getParentSpanId()).isEqualTo(reserve.getSpanId());
            assertThat(charge.getAttributes().get(CoopTracing.OUTCOME)).isEqualTo("failed");
            assertThat(charge.getAttributes().get(CoopTracing.SAGA)).isEqualTo("payment");
            assertThat(charge.getAttributes().get(CoopTracing.RUN_ID)).isNotBlank();
            assertThat(charge.getAttributes().get(CoopTracing.ATTEMPT)).isEqualTo(1L);
            assertThat(charge.getStatus().getStatusCode()).isEqualTo(io.opentelemetry.api.trace.StatusCode.ERROR);
            assertThat(all).anyMatch(s -> s.getName().startsWith("compensate order")
                    && s.getParentSpanId().equals(request.getSpanContext().getSpanId()));
            assertThat(byName).doesNotContainKey("order confirm"); // the run rolled back before it
        }
    }

    @Test
    void aLaunchOutsideAnySpanStartsATraceOfItsOwn(DataSource dataSource) {
        Saga<Order> order = Saga.on(SOLO, "order2").step("only", step -> {
        }).build();
        try (CoopEngine engine = Coop.engine(dataSource).name("solo").workers(1).register(order)
                .listener(new CoopTracing(otel)).start()) {
            MessageId message = engine.client().launch(SOLO, new Order("o-2"));
            assertThat(engine.client().awaitCompletion(message, Duration.ofSeconds(30))).isEqualTo(Outcome.COMMITTED);
            Await.until("the step's span", Duration.ofSeconds(10),
                    () -> spans.getFinishedSpanItems().stream().anyMatch(s -> s.getName().equals("order2 only")));
            SpanData launch = spans.getFinishedSpanItems().stream()
                    .filter(s -> s.getName().equals("launch tracing.solo")).findFirst().orElseThrow();
            SpanData step = spans.getFinishedSpanItems().stream().filter(s -> s.getName().equals("order2 only"))
                    .findFirst().orElseThrow();
            assertThat(step.getParentSpanId()).isEqualTo(launch.getSpanId());
            assertThat(engine.client().tree(message).toString()).isNotEmpty();
            assertThat(EngineListener.TRACE_PARENT).isEqualTo("coop.traceparent");
        }
    }
}
