import { encode } from "../contract/encode.js";
import type { PrpEvent } from "../contract/kinds.js";
import { sequencedId } from "../contract/ids.js";
import { buildEvent } from "./event-envelope.js";

export interface EventSource {
  runId: string;
  normalizedSessionId: string;
  /** The runner instance: the source of every event this runner emits. */
  runnerId: string;
}

/** Local emittedAt is synthesised from the sequence number (runtime.md §4.5), so runs are reproducible. */
const EPOCH = Date.UTC(2026, 7, 7, 21, 0, 0);

/**
 * Gives PRP events their envelope: the next sourceSeq, the deterministic id
 * `event_<runId>_<seq as 3 digits>` (see sequencedId), the synthesised timestamp and the priority of the type.
 * Every event passes the codec before it leaves: the runner never emits what its own contract
 * rejects (a violation throws ContractViolation, and the caller decides who is at fault).
 */
export class EventSequencer {
  private seq = 0;

  constructor(private readonly source: EventSource) {}

  /** The next event, or its size when it is over `maxBytes` (then no sequence number is used). */
  next(eventType: string, payload: Record<string, unknown>, ids: { turnId?: string; itemId?: string } = {}, maxBytes = Infinity): { event: PrpEvent; line: string } | { tooLarge: number } {
    const sourceSeq = this.seq + 1;
    const event = buildEvent({
      sourceSeq,
      sourceEventId: sequencedId("event", this.source.runId, sourceSeq, 3),
      emittedAt: new Date(EPOCH + sourceSeq).toISOString(),
      sourceInstanceId: this.source.runnerId,
      runId: this.source.runId,
      normalizedSessionId: this.source.normalizedSessionId,
      eventType,
      payload,
      turnId: ids.turnId,
      itemId: ids.itemId,
    });
    const line = encode(event, "event");
    if (line.length > maxBytes / 3 && Buffer.byteLength(line) > maxBytes) return { tooLarge: Buffer.byteLength(line) };
    this.seq = sourceSeq; // only a valid event consumes a sequence number: the stream has no gaps
    return { event, line };
  }
}
