package dev.coop;

import dev.coop.failure.CoopValidationException;
import dev.coop.internal.store.InputLimits;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;

/**
 * How a message is launched, beyond its topic and payload: one immutable value taken by
 * {@link CoopClient#launch(Topic, Object, LaunchOptions)} and {@link StepContext#launch(Topic, Object, LaunchOptions)}
 * alike. Start from {@link #none()} and set what you need; each option is checked as it is set, and may be set once.
 *
 * <pre>{@code
 * LaunchOptions.none().idempotencyKey("order-42").orderingKey("account-7").priority(5)
 * }</pre>
 *
 * <ul>
 *   <li>{@link #idempotencyKey(String)}: a second launch with the same key on the same topic launches nothing and
 *       returns the first message's id, for as long as that message exists (retention deletes it with its key).</li>
 *   <li>{@link #priority(int)}: among the runnable runs of a saga, higher priorities are claimed first; within one
 *       priority, the earliest due first.</li>
 *   <li>{@link #orderingKey(String)}: the runs of one saga whose messages carry the same ordering key run one at a
 *       time, whole run after whole run, in launch order; different keys run in parallel.</li>
 *   <li>{@link #at(Instant)}: a delayed launch; {@link #context(CooperationContext)}: context the runs start with.</li>
 * </ul>
 */
public final class LaunchOptions {
    /** The lowest priority. */
    public static final int MIN_PRIORITY = InputLimits.MIN_PRIORITY;
    /** The highest priority. */
    public static final int MAX_PRIORITY = InputLimits.MAX_PRIORITY;
    /** The priority of a launch that sets none. */
    public static final int DEFAULT_PRIORITY = 0;
    /** The longest idempotency or ordering key, in characters. */
    public static final int MAX_KEY_LENGTH = InputLimits.MAX_KEY_LENGTH;

    private static final LaunchOptions NONE = new LaunchOptions(null, null, null, null, null, null, null);

    private final String idempotencyKey;
    private final Integer priority;
    private final String orderingKey;
    private final Instant at;
    private final CooperationContext context;
    private final String businessKey;
    private final java.util.List<String> tags;

    private LaunchOptions(String idempotencyKey, Integer priority, String orderingKey, Instant at,
            CooperationContext context, String businessKey, java.util.List<String> tags) {
        this.businessKey = businessKey;
        this.tags = tags;
        this.idempotencyKey = idempotencyKey;
        this.priority = priority;
        this.orderingKey = orderingKey;
        this.at = at;
        this.context = context;
    }

    /** No option set: what the launch overloads without options use. */
    public static LaunchOptions none() {
        return NONE;
    }

    /**
     * These options with an idempotency key: 1 to {@value #MAX_KEY_LENGTH} characters, no control characters.
     * Scoped by topic: the same key on two topics names two messages.
     */
    public LaunchOptions idempotencyKey(String key) {
        once("idempotencyKey", idempotencyKey);
        return new LaunchOptions(InputLimits.key("An idempotency key", key), priority, orderingKey, at, context,
                businessKey, tags);
    }

    /** These options with a priority between {@value #MIN_PRIORITY} and {@value #MAX_PRIORITY}; higher runs first. */
    public LaunchOptions priority(int priority) {
        once("priority", this.priority);
        if (priority < MIN_PRIORITY || priority > MAX_PRIORITY) {
            throw new CoopValidationException("A priority must be between " + MIN_PRIORITY + " and " + MAX_PRIORITY
                    + ", was " + priority);
        }
        return new LaunchOptions(idempotencyKey, priority, orderingKey, at, context, businessKey, tags);
    }

    /**
     * These options with an ordering key (an account id, say): 1 to {@value #MAX_KEY_LENGTH} characters, no control
     * characters. Runs of one saga with the same key run one at a time, in launch order.
     */
    public LaunchOptions orderingKey(String key) {
        once("orderingKey", orderingKey);
        return new LaunchOptions(idempotencyKey, priority, InputLimits.key("An ordering key", key), at, context,
                businessKey, tags);
    }

    /** These options with a start time: the runs start at {@code at}, not before (a delayed launch). */
    public LaunchOptions at(Instant at) {
        once("at", this.at);
        Objects.requireNonNull(at, "at");
        return new LaunchOptions(idempotencyKey, priority, orderingKey, InputLimits.instant("A start time", at),
                context, businessKey, tags);
    }

    /** These options with context the runs start with (added to the launching run's own, for a step's launch). */
    public LaunchOptions context(CooperationContext context) {
        once("context", this.context);
        Objects.requireNonNull(context, "context");
        return new LaunchOptions(idempotencyKey, priority, orderingKey, at, context, businessKey, tags);
    }

    /**
     * These options with a business key ({@code order/4711}): 1 to {@value #MAX_KEY_LENGTH} characters, no control
     * characters. Not unique: it labels the hierarchy, so that {@link CoopClient#runs} (and the CLI, the dashboard)
     * find it by key ({@link dev.coop.inspect.RunQuery#businessKey(String)}), through an index.
     */
    public LaunchOptions businessKey(String key) {
        once("businessKey", businessKey);
        return new LaunchOptions(idempotencyKey, priority, orderingKey, at, context,
                InputLimits.key("A business key", key), tags);
    }

    /** The most tags a launch carries. */
    public static final int MAX_TAGS = 10;
    /** The longest tag, in characters. */
    public static final int MAX_TAG_LENGTH = 100;

    /**
     * These options with tags ({@code vip}, {@code region:eu}): 1 to {@value #MAX_TAGS} distinct tags of 1 to
     * {@value #MAX_TAG_LENGTH} characters, no control characters; found with
     * {@link dev.coop.inspect.RunQuery#tag(String)} through an index.
     */
    public LaunchOptions tags(String... tags) {
        once("tags", this.tags);
        Objects.requireNonNull(tags, "tags");
        if (tags.length == 0 || tags.length > MAX_TAGS) {
            throw new CoopValidationException("A launch carries 1 to " + MAX_TAGS + " tags, was " + tags.length);
        }
        java.util.LinkedHashSet<String> distinct = new java.util.LinkedHashSet<>();
        for (String tag : tags) {
            InputLimits.key("A tag", tag);
            if (tag.length() > MAX_TAG_LENGTH) {
                throw new CoopValidationException("A tag must be at most " + MAX_TAG_LENGTH + " characters, was "
                        + tag.length());
            }
            if (!distinct.add(tag)) {
                throw new CoopValidationException("The tag '" + tag + "' was given twice");
            }
        }
        return new LaunchOptions(idempotencyKey, priority, orderingKey, at, context, businessKey,
                java.util.List.copyOf(distinct));
    }

    public Optional<String> businessKey() {
        return Optional.ofNullable(businessKey);
    }

    /** The tags, empty unless set. */
    public java.util.List<String> tags() {
        return tags == null ? java.util.List.of() : tags;
    }

    private static void once(String option, Object current) {
        if (current != null) {
            throw new CoopValidationException("The launch option " + option + " was already set to '" + current
                    + "'");
        }
    }

    public Optional<String> idempotencyKey() {
        return Optional.ofNullable(idempotencyKey);
    }

    /** The priority, {@value #DEFAULT_PRIORITY} unless set. */
    public int priority() {
        return priority == null ? DEFAULT_PRIORITY : priority;
    }

    public Optional<String> orderingKey() {
        return Optional.ofNullable(orderingKey);
    }

    public Optional<Instant> at() {
        return Optional.ofNullable(at);
    }

    /** The context set, or the empty context. */
    public CooperationContext context() {
        return context == null ? CooperationContext.empty() : context;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof LaunchOptions other && Objects.equals(idempotencyKey, other.idempotencyKey)
                && Objects.equals(priority, other.priority) && Objects.equals(orderingKey, other.orderingKey)
                && Objects.equals(at, other.at) && Objects.equals(context, other.context)
                && Objects.equals(businessKey, other.businessKey) && Objects.equals(tags, other.tags);
    }

    @Override
    public int hashCode() {
        return Objects.hash(idempotencyKey, priority, orderingKey, at, context, businessKey, tags);
    }

    @Override
    public String toString() {
        StringBuilder s = new StringBuilder("LaunchOptions[");
        if (idempotencyKey != null) {
            s.append("idempotencyKey=").append(idempotencyKey).append(", ");
        }
        if (priority != null) {
            s.append("priority=").append(priority).append(", ");
        }
        if (orderingKey != null) {
            s.append("orderingKey=").append(orderingKey).append(", ");
        }
        if (at != null) {
            s.append("at=").append(at).append(", ");
        }
        if (context != null) {
            s.append("context=").append(context).append(", ");
        }
        if (businessKey != null) {
            s.append("businessKey=").append(businessKey).append(", ");
        }
        if (tags != null) {
            s.append("tags=").append(tags).append(", ");
        }
        if (s.charAt(s.length() - 1) == ' ') {
            s.setLength(s.length() - 2);
        }
        return s.append(']').toString();
    }
}
