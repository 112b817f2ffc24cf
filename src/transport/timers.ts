/** Time and timers, injected so that tests move time instead of waiting for it. */
export interface Timers {
  now(): number;
  /** Calls `fn` once, `ms` from now; the returned function cancels it. */
  after(ms: number, fn: () => void): () => void;
  /**
   * Calls `fn` every `ms` until the returned function cancels it. One timer for the whole life
   * of its owner: a heartbeat on each of thousands of connections makes no garbage per beat.
   */
  every(ms: number, fn: () => void): () => void;
}

/** The process clock. A pending timer does not keep the process alive: its owner's socket does. */
export const systemTimers: Timers = {
  now: () => Date.now(),
  after: (ms, fn) => {
    const timer = setTimeout(fn, ms);
    timer.unref();
    return () => clearTimeout(timer);
  },
  every: (ms, fn) => {
    const timer = setInterval(fn, ms);
    timer.unref();
    return () => clearInterval(timer);
  },
};
