import { transportError, type TransportError } from "./errors.js";
import { grainOf } from "./interval-wheel.js";
import { DEAD_PEER_MISSED_BEATS } from "./limits.js";
import { systemTimers, type Timers } from "./timers.js";

/** How one side of a connection notices a dead peer. */
export interface HeartbeatOptions {
  /** A peer silent longer than this is taken for dead; default 3 missed beats (3 × interval). */
  deadPeerTimeoutMs?: number;
  /** Monotonic time for the beat, apart from the lease clock; tests inject their own. */
  timers?: Timers;
}

const HEARD = 0;
const SENT = 1;

export const defaultDeadPeerTimeoutMs = (intervalMs: number): number => DEAD_PEER_MISSED_BEATS * intervalMs;

/**
 * The heartbeat of one connection (runtime.md §5.3 step 8, §5.5). Every interval it checks how
 * long the peer has been silent, and beats (the core sends a WebSocket ping) unless frames went
 * both ways within the interval: those already showed each side the other is there, so a
 * connection busy with events, or an idle one whose lease renewals come at least once an
 * interval, pays for no beat. A beat may run up to a tenth of the interval late (the beats of
 * all connections share wake-ups: interval-wheel.ts), so "within the interval" allows that
 * much more; the peer then hears this side at least every two intervals and a fifth, well
 * inside its limit of three. Silence counts only while this side reads: while its own handler
 * holds the next frame back, nothing can be heard, and that is not the peer's fault. The limit
 * must be passed at two beats in a row: after a stall of this process its timers run before the
 * socket reads that waited, and what waited must be heard first. A half-open TCP connection is
 * noticed here, not by TCP.
 */
export class Heartbeat {
  private readonly timers: Timers;
  private readonly timeoutMs: number;
  /** Traffic within this long of a beat stands in for it: the interval and a beat's lateness. */
  private readonly quietMs: number;
  /**
   * When the peer was last heard, and this side last sent ([HEARD], [SENT]). In a typed array, so
   * that a frame writes the time in place: a number field gets a new heap number each time, which
   * at 10,000 connections outlived the young generation once per frame.
   */
  private readonly last = new Float64Array(2);
  private holding = false;
  private overdue = false;
  private readonly cancel: () => void;
  private stopped = false;

  constructor(
    intervalMs: number,
    options: HeartbeatOptions,
    private readonly beat: (() => void) | null,
    private readonly onSilent: (error: TransportError) => void,
  ) {
    this.timers = options.timers ?? systemTimers;
    this.timeoutMs = options.deadPeerTimeoutMs ?? defaultDeadPeerTimeoutMs(intervalMs);
    this.quietMs = intervalMs + grainOf(intervalMs);
    this.last[HEARD] = this.timers.now();
    this.last[SENT] = -Infinity;
    this.cancel = this.timers.every(intervalMs, () => this.tick());
  }

  /** A frame arrived; this side's handler now holds the reader. */
  heard(): void {
    this.last[HEARD] = this.timers.now();
    this.holding = true;
  }

  /** A control frame (a WebSocket ping or pong) arrived: the peer is there; no handler holds anything. */
  alive(): void {
    this.last[HEARD] = this.timers.now();
  }

  /** This side sent a frame to the peer. */
  sent(): void {
    this.last[SENT] = this.timers.now();
  }

  /** This side reads again: silence counts from now. */
  reading(): void {
    this.last[HEARD] = this.timers.now();
    this.holding = false;
  }

  stop(): void {
    this.stopped = true;
    this.cancel();
  }

  private tick(): void {
    if (this.stopped) return;
    const nowMs = this.timers.now();
    const silentMs = nowMs - this.last[HEARD]!;
    const wasOverdue = this.overdue;
    this.overdue = !this.holding && silentMs > this.timeoutMs;
    if (this.overdue && wasOverdue) {
      this.stop();
      return this.onSilent(
        transportError(
          "peer_silent",
          "",
          `nothing heard from the peer for ${silentMs} ms (the limit is ${this.timeoutMs} ms)`,
        ),
      );
    }
    if (silentMs < this.quietMs && nowMs - this.last[SENT]! < this.quietMs) return;
    this.beat?.();
  }
}
