package dev.coop.render;

/**
 * How {@link TextRenderer} draws a tree. Immutable; each {@code with} method returns a changed copy.
 *
 * @param unicode box-drawing characters and symbols; false draws with ASCII only
 * @param colors ANSI colours (for a terminal); false for files, pipes and tests
 * @param frames the stack frames of failures; false shows only types, messages and sources
 * @param ids run ids on every run line (the message id is always shown)
 */
public record RenderOptions(boolean unicode, boolean colors, boolean frames, boolean ids) {

    /** Unicode, no colours, no frames, no run ids: what goes into files and golden tests. */
    public static RenderOptions defaults() {
        return new RenderOptions(true, false, false, false);
    }

    /** Plain ASCII, no colours, no frames, no run ids. */
    public static RenderOptions ascii() {
        return new RenderOptions(false, false, false, false);
    }

    public RenderOptions withUnicode(boolean on) {
        return new RenderOptions(on, colors, frames, ids);
    }

    public RenderOptions withColors(boolean on) {
        return new RenderOptions(unicode, on, frames, ids);
    }

    public RenderOptions withFrames(boolean on) {
        return new RenderOptions(unicode, colors, on, ids);
    }

    public RenderOptions withIds(boolean on) {
        return new RenderOptions(unicode, colors, frames, on);
    }
}
