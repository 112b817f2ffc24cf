/** The most of an agent's text a card shows: its end, where output and a streaming message grow. */
export const SHOWN_CHARS = 4000;

/** Terminal escapes and other control characters made visible (␛, ␇ …); newlines, tabs and carriage returns kept. */
const visibleControls = (text: string) =>
  text.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g, (c) =>
    String.fromCharCode(c === "\u007f" ? 0x2421 : 0x2400 + c.charCodeAt(0)),
  );

/**
 * The end of a text the agent wrote, as text (never as markup), and how much came before it:
 * `total` is the whole text's length when the API sent only its end.
 */
export function BoundedText({ text, total, testId }: { text: string; total?: number; testId?: string }) {
  const shown = text.length > SHOWN_CHARS ? text.slice(-SHOWN_CHARS) : text;
  const earlier = Math.max(total ?? text.length, text.length) - shown.length;
  return (
    <div class="bounded-text" data-testid={testId}>
      {earlier > 0 && <p class="muted">…{earlier} earlier characters not shown</p>}
      <pre>{visibleControls(shown)}</pre>
    </div>
  );
}
