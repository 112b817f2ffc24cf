/**
 * Repeating callbacks that share their wake-ups. Node gives every `setInterval` a wake-up of its
 * own at the millisecond it falls due: the heartbeats of 10,000 connections made at different
 * moments, each every 30 s, woke the process 333 times a second, and each wake-up (the event
 * loop's poll, the timer list, a callback scope) cost far more than the check it ran: 1.75% of a
 * core against 0.32% for the same beats on whole seconds (measured in one process). Here the
 * beats of one interval fall on a grid of `grainMs` (a tenth of the interval, at most 1 s), so
 * all that fall in one slot run in one wake-up; a beat is never early, and at most one grain
 * late. Node has no coalescing timer and no maintained package offers one, hence this.
 */

/** The clock and the one-shot timer a wheel runs on; tests pass their own. */
export interface WheelClock {
  /** Monotonic milliseconds. */
  now(): number;
  /** Calls `fn` once, `ms` from now, without keeping the process alive; returns its cancel. */
  once(ms: number, fn: () => void): () => void;
}

/** A one-shot timer that does not keep the process alive (its owner's socket does); returns its cancel. */
export function unrefTimeout(ms: number, fn: () => void): () => void {
  const timer = setTimeout(fn, ms);
  timer.unref();
  return () => clearTimeout(timer);
}

/** The process clock a wheel runs on unless a test gives its own. */
const monotonicClock: WheelClock = { now: () => performance.now(), once: unrefTimeout };

/** The grid of an interval: a tenth of it, at most a second, at least 1 ms. */
export const grainOf = (intervalMs: number): number => Math.max(1, Math.min(1_000, Math.floor(intervalMs / 10)));

interface Beat {
  dueMs: number;
  cancelled: boolean;
  readonly intervalMs: number;
  readonly fn: () => void;
}

/** The beats of every interval with the same grain, by the slot (a multiple of the grain) they run in. */
export class IntervalWheel {
  private readonly slots = new Map<number, Set<Beat>>();
  private cancelWake: (() => void) | null = null;
  private wakeSlot = Infinity;
  private running = false;

  constructor(
    private readonly grainMs: number,
    private readonly clock: WheelClock = monotonicClock,
  ) {}

  /** Calls `fn` every `intervalMs` until the returned function cancels it. */
  every(intervalMs: number, fn: () => void): () => void {
    const beat: Beat = { dueMs: this.clock.now() + intervalMs, cancelled: false, intervalMs, fn };
    this.place(beat);
    return () => {
      if (beat.cancelled) return;
      beat.cancelled = true;
      const slot = this.slotOf(beat.dueMs);
      const beats = this.slots.get(slot);
      if (!beats?.delete(beat) || beats.size > 0) return;
      this.slots.delete(slot);
      if (this.slots.size === 0 && !this.running) this.wakeAt(Infinity);
    };
  }

  /** How many beats are registered. */
  get size(): number {
    let n = 0;
    for (const beats of this.slots.values()) n += beats.size;
    return n;
  }

  private slotOf(dueMs: number): number {
    return Math.ceil(dueMs / this.grainMs);
  }

  private place(beat: Beat): void {
    const slot = this.slotOf(beat.dueMs);
    let beats = this.slots.get(slot);
    if (!beats) this.slots.set(slot, (beats = new Set()));
    beats.add(beat);
    if (!this.running && slot < this.wakeSlot) this.wakeAt(slot);
  }

  /** One pending wake-up at most, for the earliest slot (none for Infinity). */
  private wakeAt(slot: number): void {
    this.cancelWake?.();
    this.cancelWake = null;
    this.wakeSlot = slot;
    if (slot !== Infinity)
      this.cancelWake = this.clock.once(Math.max(0, slot * this.grainMs - this.clock.now()), () => this.run());
  }

  /**
   * Runs every slot that is due, each beat once, then wakes again for the earliest slot left. A
   * callback that throws does not keep the others of its slot from running; the first error is
   * thrown once they have, as a throwing timer callback's would be.
   */
  private run(): void {
    this.cancelWake = null;
    this.running = true;
    let failure: { err: unknown } | null = null;
    try {
      const nowMs = this.clock.now();
      const due = [...this.slots.keys()].filter((slot) => slot * this.grainMs <= nowMs).sort((a, b) => a - b);
      for (const slot of due) {
        const beats = this.slots.get(slot)!;
        this.slots.delete(slot);
        for (const beat of beats) {
          if (beat.cancelled) continue; // by an earlier callback of this slot
          // Missed beats (a stalled process) are not made up: the next is the first due after now.
          do beat.dueMs += beat.intervalMs;
          while (beat.dueMs <= nowMs);
          this.place(beat); // before the callback, so that one cancelling itself finds its beat
          try {
            beat.fn();
          } catch (err) {
            failure ??= { err };
          }
        }
      }
    } finally {
      this.running = false;
      let next = Infinity;
      for (const slot of this.slots.keys()) next = Math.min(next, slot);
      this.wakeAt(next);
    }
    if (failure) throw failure.err;
  }
}

const wheels = new Map<number, IntervalWheel>();

/** The process's shared wheel for an interval's grain. */
export function wheelFor(intervalMs: number): IntervalWheel {
  const grain = grainOf(intervalMs);
  let wheel = wheels.get(grain);
  if (!wheel) wheels.set(grain, (wheel = new IntervalWheel(grain)));
  return wheel;
}
