package dev.coop;

import dev.coop.failure.CoopException;
import dev.coop.failure.CoopValidationException;
import dev.coop.failure.CooperationException;
import dev.coop.failure.Failure;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;

/**
 * What one run returned: the value its steps set with {@link StepContext#setResult(Object)}, once it committed. A
 * run that did not commit has no result and says why ({@link #failure()}).
 */
public final class RunResult {
    private final MessageId message;
    private final String saga;
    private final UUID runId;
    private final RunStatus status;
    private final String json;
    private final Failure failure;
    private final ObjectMapper mapper;

    /** For Coop; read results through {@link StepContext#childResults()} or {@link CoopClient#results}. */
    public RunResult(MessageId message, String saga, UUID runId, RunStatus status, String json, Failure failure,
            ObjectMapper mapper) {
        this.message = message;
        this.saga = saga;
        this.runId = runId;
        this.status = status;
        this.json = json;
        this.failure = failure;
        this.mapper = mapper;
    }

    /** The message the run handled. */
    public MessageId message() {
        return message;
    }

    /** The saga of the run. */
    public String saga() {
        return saga;
    }

    public UUID runId() {
        return runId;
    }

    public RunStatus status() {
        return status;
    }

    /** Whether the run committed and set a result. */
    public boolean hasResult() {
        return status == RunStatus.COMMITTED && json != null;
    }

    /** The result's JSON text, when {@link #hasResult()}. */
    public Optional<String> json() {
        return hasResult() ? Optional.of(json) : Optional.empty();
    }

    /** Why the run has no result: its failure, when it rolled back (or failed to). */
    public Optional<Failure> failure() {
        return Optional.ofNullable(failure);
    }

    /**
     * The result read as {@code type}.
     *
     * @throws NoResultException when the run did not commit (the message says why) or set no result
     */
    public <T> T get(Class<T> type) {
        Objects.requireNonNull(type, "type");
        if (status != RunStatus.COMMITTED) {
            throw new NoResultException("Run " + runId + " of saga '" + saga + "' (message " + message
                    + ") has no result: it " + describe(status)
                    + (failure == null ? "" : ": " + failure.type() + ": " + failure.message()), failure);
        }
        if (json == null) {
            throw new NoResultException("Run " + runId + " of saga '" + saga + "' (message " + message
                    + ") committed without setting a result", null);
        }
        try {
            return mapper.readValue(json, type);
        } catch (JsonProcessingException e) {
            throw new CoopValidationException("Result of run " + runId + " of saga '" + saga + "' cannot be read as "
                    + type.getName() + ": " + e.getOriginalMessage(), e);
        }
    }

    private static String describe(RunStatus status) {
        return switch (status) {
            case ROLLED_BACK -> "rolled back";
            case ROLLBACK_FAILED -> "failed to roll back";
            case PARKED -> "is parked";
            default -> "has not finished (" + status + ")";
        };
    }

    @Override
    public String toString() {
        return "RunResult[" + saga + " " + runId + " " + status + (hasResult() ? " " + json : "") + "]";
    }

    /** A run has no result: it did not commit (see {@link #failure()}), or never set one. */
    public static final class NoResultException extends CoopException {
        private static final long serialVersionUID = 1L;
        private final transient Failure failure;

        NoResultException(String message, Failure failure) {
            super(message, failure == null ? null : CooperationException.of(failure));
            this.failure = failure;
        }

        /** The run's failure, when it rolled back. */
        public Optional<Failure> failure() {
            return Optional.ofNullable(failure);
        }
    }
}
