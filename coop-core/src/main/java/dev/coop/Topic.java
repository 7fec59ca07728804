package dev.coop;

import dev.coop.failure.CoopValidationException;

import java.util.Objects;
import java.util.regex.Pattern;

/**
 * A named channel of messages whose payloads have type {@code P}. Names are 1 to 200 characters: letters, digits
 * and {@code . _ - : /}.
 */
public final class Topic<P> {
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}");

    private final String name;
    private final Class<P> payloadType;

    private Topic(String name, Class<P> payloadType) {
        this.name = name;
        this.payloadType = payloadType;
    }

    /** A topic named {@code name} carrying payloads of {@code payloadType} (serialized as JSON with Jackson). */
    public static <P> Topic<P> of(String name, Class<P> payloadType) {
        Objects.requireNonNull(payloadType, "payloadType");
        validateName(name);
        return new Topic<>(name, payloadType);
    }

    static void validateName(String name) {
        if (name == null) {
            throw new CoopValidationException("Topic name is missing (null)");
        }
        if (!NAME.matcher(name).matches()) {
            throw new CoopValidationException("Invalid topic name '" + name
                    + "': use 1 to 200 letters, digits or . _ - : / and start with a letter or digit");
        }
    }

    public String name() {
        return name;
    }

    public Class<P> payloadType() {
        return payloadType;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Topic<?> t && t.name.equals(name) && t.payloadType.equals(payloadType);
    }

    @Override
    public int hashCode() {
        return name.hashCode();
    }

    @Override
    public String toString() {
        return "Topic[" + name + ", " + payloadType.getSimpleName() + "]";
    }
}
