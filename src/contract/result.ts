/** What a step that can be refused returns: its value, or why not, in the error type of its layer. */
export type Outcome<T, E> = { ok: true; value: T } | { ok: false; error: E };

export const ok = <T>(value: T): { ok: true; value: T } => ({ ok: true, value });
