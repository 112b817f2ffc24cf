/** The value a label takes when it would be new past its bound, or is not a plain code. */
export const OTHER = "other";

/**
 * A label's values kept to a fixed set: each Prometheus label value is a time series the
 * server keeps forever, so a value that a peer can influence (a refusal code for a frame it
 * sent) must not be able to grow that set. A value is taken as itself only when it looks like
 * one of our codes and is among the first `max` distinct ones seen; anything else is "other".
 */
export class BoundedLabel {
  private readonly seen: Set<string>;

  constructor(
    private readonly max: number,
    known: readonly string[] = [],
  ) {
    this.seen = new Set(known);
  }

  value(candidate: string): string {
    if (this.seen.has(candidate)) return candidate;
    if (!/^[a-z][a-z0-9_]{0,47}$/.test(candidate) || this.seen.size >= this.max) return OTHER;
    this.seen.add(candidate);
    return candidate;
  }
}
