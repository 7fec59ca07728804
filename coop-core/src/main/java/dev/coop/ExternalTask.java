package dev.coop;

import java.util.Optional;

/**
 * An external task a step opened: a child of the step whose handler lives outside Coop (a payment provider's
 * webhook, a person's approval, a partner's file). The run's next step starts when every child and external task of
 * the step finished; whoever does the work settles the task with {@link CoopClient#complete(String, Object)} or
 * {@link CoopClient#fail(String, String)}, by its {@link #token()} or its {@link #key()}. Nothing is written until the
 * step commits: a step that fails opened no task.
 *
 * @param name what the task is (a topic-like name, e.g. {@code manager-approval}); its message's topic
 * @param message the task's message: the parent's next step reads the task's result with
 *        {@link StepContext#childResult(MessageId, Class)} or {@link StepContext#taskResult(String, Class)}
 * @param token the opaque token that addresses the task: unguessable, URL-safe, safe to hand to a partner
 * @param key the correlation key the step chose (unique among open tasks), if any
 */
public record ExternalTask(String name, MessageId message, String token, Optional<String> key) {
    /** The saga name the run rows of external tasks carry: no saga can be named so (names start alphanumeric). */
    public static final String SAGA = "~external-task";
}
