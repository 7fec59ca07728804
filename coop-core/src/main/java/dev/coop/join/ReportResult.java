package dev.coop.join;

/** What an explicit report ({@link Joins#reportCompleted}, {@link Joins#reportFailed}) did. */
public enum ReportResult {
    /** The member was pending; the report settled it and was counted. */
    RECORDED,
    /** The member had been settled before (by an earlier report, or because its runs finished); nothing changed. */
    ALREADY_SETTLED
}
