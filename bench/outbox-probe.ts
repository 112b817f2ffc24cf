/**
 * Watches the durable runner's outbox from outside, with no hook in src/: while installed, every
 * `RunnerState.admit` that commits an event, every `pendingAfter` (the runner reads what it is
 * about to send, then sends it) and every `applyAck` is timestamped, per source sequence. The
 * DurableRunner owns its state privately, so wrapping the prototype's methods is the only place
 * to see when an event entered the outbox, left on the wire, and was acknowledged.
 */
import { RunnerState } from "../src/runner/durable/runner-state.js";

export interface OutboxProbe {
  /** When each source sequence was committed to the runner's outbox. */
  admittedAt: number[];
  /** When the runner first read each source sequence to send it. */
  sentAt: number[];
  /** When the runner applied the first ACK that covered each source sequence. */
  ackedAt: number[];
  /** Puts the two methods back. */
  restore(): void;
}

export function observeOutbox(now: () => number): OutboxProbe {
  const proto = RunnerState.prototype;
  const { admit, pendingAfter, applyAck } = proto;
  const probe: OutboxProbe = {
    admittedAt: [],
    sentAt: [],
    ackedAt: [],
    restore: () => Object.assign(proto, { admit, pendingAfter, applyAck }),
  };
  let ackedThrough = 0;
  proto.admit = function (this: RunnerState, ...args: Parameters<RunnerState["admit"]>) {
    const admission = admit.apply(this, args);
    if (admission.ok) probe.admittedAt[admission.sourceSeq] = now();
    return admission;
  };
  proto.pendingAfter = function (this: RunnerState, ...args: Parameters<RunnerState["pendingAfter"]>) {
    const pending = pendingAfter.apply(this, args);
    const at = now();
    for (const p of pending) probe.sentAt[p.sourceSeq] ??= at;
    return pending;
  };
  proto.applyAck = function (this: RunnerState, n: number) {
    const applied = applyAck.call(this, n);
    if (applied.ok) {
      const at = now();
      for (; ackedThrough < n; ackedThrough++) probe.ackedAt[ackedThrough + 1] = at;
    }
    return applied;
  };
  return probe;
}
