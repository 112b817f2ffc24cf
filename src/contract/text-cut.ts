/**
 * Cutting text to a limit without splitting a character. `String.prototype.slice` counts UTF-16
 * units, so a cut can fall between the two halves of a surrogate pair (an emoji); the lone half
 * left behind has no UTF-8 form, canonical JSON refuses it, and the event carrying it is
 * refused. Every limit on text that came from a harness or an agent is applied through here.
 */

/** The longest prefix of `text` of at most `maxUnits` UTF-16 units that ends on a code point boundary. */
export function cutText(text: string, maxUnits: number): string {
  if (text.length <= maxUnits) return text;
  const end = Math.max(0, maxUnits);
  const last = text.charCodeAt(end - 1);
  // A high surrogate as the last unit kept: its low half is past the cut, so the pair goes whole.
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? end - 1 : end);
}

/** `cutText`, with `…` appended when something was cut (the result may then be one unit longer). */
export const cutTextMarked = (text: string, maxUnits: number): string =>
  text.length > maxUnits ? `${cutText(text, maxUnits)}…` : text;

/** The longest prefix of `text` that fits in `maxBytes` UTF-8 bytes without splitting a character. */
export function cutUtf8(text: string, maxBytes: number): string {
  const buf = Buffer.from(text, "utf8");
  if (buf.length <= maxBytes) return text;
  let start = maxBytes; // the cut falls before buf[maxBytes]; back up to the start of that character
  while (start > 0 && (buf[start]! & 0xc0) === 0x80) start--;
  return buf.subarray(0, start).toString("utf8");
}

/**
 * `text` in at most `maxBytes` UTF-8 bytes plus a marker saying how many were cut: for logs and
 * messages that may carry what a peer sent, so that a big input cannot make a big log.
 */
export function cutNoted(text: string, maxBytes: number): string {
  const bytes = Buffer.byteLength(text);
  if (bytes <= maxBytes) return text;
  const kept = cutUtf8(text, maxBytes);
  return `${kept}…(${bytes - Buffer.byteLength(kept)} bytes cut)`;
}
