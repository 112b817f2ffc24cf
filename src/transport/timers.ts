import { unrefTimeout, wheelFor } from "./interval-wheel.js";

/** Time and timers, injected so that tests move time instead of waiting for it. */
export interface Timers {
  now(): number;
  /** Calls `fn` once, `ms` from now; the returned function cancels it. */
  after(ms: number, fn: () => void): () => void;
  /**
   * Calls `fn` every `ms` until the returned function cancels it: never early, and (on the
   * process clock) at most a tenth of `ms`, and at most 1 s, late. The calls of every owner with
   * the same interval share wake-ups (interval-wheel.ts): the heartbeats of thousands of
   * connections wake the process once a second, not thousands of times.
   */
  every(ms: number, fn: () => void): () => void;
}

/** The process clock. A pending timer does not keep the process alive: its owner's socket does. */
export const systemTimers: Timers = {
  now: () => Date.now(),
  after: unrefTimeout,
  every: (ms, fn) => wheelFor(ms).every(ms, fn),
};
