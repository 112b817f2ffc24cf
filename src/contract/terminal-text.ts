/*
 * Text an agent controls, made safe for a terminal. An agent's message, a tool's name, a
 * request's prompt or a harness's stderr can carry escape sequences that set the window title,
 * move the cursor, erase a line or (with OSC 52) write the clipboard, and bidirectional
 * overrides that show text in another order than it runs: printed raw, a run could draw a
 * "Run succeeded" line of its own over the CLI's. Every such character is shown as a visible
 * escape instead (`\x1b`, `\u202e`), so what a person reads is what the agent sent.
 *
 * Written by hand: the character classes are fixed by the terminal standards (ECMA-48 C0 and
 * C1, DEL) and Unicode's explicit bidi formatting characters, and strip-ansi and its kind remove
 * only well-formed sequences, where a hostile agent sends ill-formed ones as well.
 */

/** C0 and C1 controls, DEL, the bidi marks, embeddings, overrides and isolates, and the line and paragraph separators. */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;
/** The same, but for the newline and the tab, which multi-line text keeps. */
const UNSAFE_IN_LINES = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;

const escaped = (c: string): string => {
  const code = c.charCodeAt(0);
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
};

/** One line of text: every control character visible, the newline and the tab included. */
export const visible = (text: string): string => text.replace(UNSAFE, escaped);

/** Text of several lines: controls visible, newlines and tabs kept. */
export const visibleLines = (text: string): string => text.replace(UNSAFE_IN_LINES, escaped);

/**
 * A JSON text whose every character is printable: JSON.stringify escapes C0 controls but leaves
 * DEL, C1 controls and bidi characters raw. Escaping them keeps the value the same.
 */
export const printableJson = (json: string): string =>
  json.replace(UNSAFE_IN_LINES, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
