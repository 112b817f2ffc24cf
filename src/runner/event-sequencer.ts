import type { ContractError } from "../contract/errors.js";
import type { PrpEvent } from "../contract/kinds.js";
import { sequencedId } from "../contract/ids.js";
import { admittedLine, buildEvent } from "./event-envelope.js";

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
 * `event_<runId>_<seq as 3 digits>` (see sequencedId), the synthesised timestamp and the priority
 * of the type. Every event passes the shared admission rule before it leaves: the runner never
 * emits what its own contract rejects (a violation throws ContractViolation, and the caller
 * decides who is at fault), nor what the authority could not store (no canonical JSON form: refused).
 */
export class EventSequencer {
  private seq = 0;

  constructor(private readonly source: EventSource) {}

  /** The next event, or why it can never be carried (then no sequence number is used). */
  next(
    eventType: string,
    payload: Record<string, unknown>,
    ids: { turnId?: string; itemId?: string; schemaVersion?: number } = {},
    maxBytes = Infinity,
  ): { event: PrpEvent; line: string } | { tooLarge: number } | { noCanonicalForm: ContractError } {
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
      schemaVersion: ids.schemaVersion,
    });
    const admitted = admittedLine(event);
    if ("noCanonicalForm" in admitted) return admitted;
    const line = admitted.line;
    if (line.length > maxBytes / 3 && Buffer.byteLength(line) > maxBytes) return { tooLarge: Buffer.byteLength(line) };
    this.seq = sourceSeq; // only a valid event consumes a sequence number: the stream has no gaps
    return { event, line };
  }
}
