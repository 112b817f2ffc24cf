/** Time and one-shot timers, injected so that tests move time instead of waiting for it. */
export interface Timers {
  now(): number;
  /** Calls `fn` once, `ms` from now; the returned function cancels it. */
  after(ms: number, fn: () => void): () => void;
}

/** The process clock. A pending timer does not keep the process alive: its owner's socket does. */
export const systemTimers: Timers = {
  now: () => Date.now(),
  after: (ms, fn) => {
    const timer = setTimeout(fn, ms);
    timer.unref();
    return () => clearTimeout(timer);
  },
};
