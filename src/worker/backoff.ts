export interface BackoffOptions {
  /** The first retry's delay before jitter. */
  baseMs: number;
  /** No delay is longer. */
  maxMs: number;
  /** [0, 1): injectable so a test can fix the jitter. */
  random: () => number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { baseMs: 250, maxMs: 10_000, random: Math.random };

/**
 * The delay before retry number `failures` (0 for the first): doubling up to `maxMs`, then a
 * random half of it taken off, so that workers that failed together do not retry together.
 */
export function backoffMs(failures: number, options: BackoffOptions = DEFAULT_BACKOFF): number {
  const full = Math.min(options.maxMs, options.baseMs * 2 ** Math.min(failures, 30));
  return Math.round(full * (0.5 + options.random() * 0.5));
}
