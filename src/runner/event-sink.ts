import type { ContractError } from "../contract/errors.js";
import { MAX_FRAME_BYTES } from "../contract/versions.js";
import { EventSequencer, type EventSource } from "./event-sequencer.js";
import { eventRecordLine } from "./stream.js";

/** An event as the run reports it, before the sink gives it its envelope. */
export interface PendingEvent {
  eventType: string;
  payload: Record<string, unknown>;
  turnId?: string;
  itemId?: string;
  /** The envelope version when the type needs more than v1 (wire.md O1). */
  schemaVersion?: number;
}

/** What a sink did with an event. */
export type Offer =
  /** Taken; `congested` asks the caller to send nothing more until `onRoom`. */
  | { kind: "admitted"; congested: boolean }
  /** Not taken now: offer it again after `onRoom`. */
  | { kind: "full" }
  /** Never takeable (larger than the sink can ever hold, or without a canonical JSON form). */
  | { kind: "refused"; code: string; message: string };

/**
 * Where a run's events go. `offer` gives the event its envelope and checks it against the
 * contract (throwing ContractViolation when it breaks it); `onRoom` calls back once when a
 * congested or full sink can take events again.
 */
export interface EventSink {
  offer(event: PendingEvent): Offer;
  onRoom(resume: () => void): void;
}

/** The refusal of an event that the contract accepts but canonical JSON cannot hold, in every sink. */
export const refusedUncanonical = (error: ContractError): Offer => ({
  kind: "refused",
  code: "no_canonical_json",
  message: `${error.path || "/"}: ${error.message}`,
});

export interface LineOutput {
  /** One line (no newline); false when the reader is behind. */
  write(line: string): boolean;
  onDrain(resume: () => void): void;
  /** Calls `done` once every line written so far has been handed to the reader (a pipe: the OS). */
  flush?(done: () => void): void;
}

/** Local mode: deterministic envelopes (runtime.md §4.5) as paperclip.runner.stream.v1 records. */
export function streamSink(source: EventSource, out: LineOutput): EventSink {
  const sequencer = new EventSequencer(source);
  return {
    offer: (e) => {
      const next = sequencer.next(e.eventType, e.payload, e, MAX_FRAME_BYTES);
      if ("tooLarge" in next)
        return {
          kind: "refused",
          code: "frame_too_large",
          message: `a ${next.tooLarge}-byte event is over the ${MAX_FRAME_BYTES}-byte frame limit`,
        };
      if ("noCanonicalForm" in next) return refusedUncanonical(next.noCanonicalForm);
      return { kind: "admitted", congested: !out.write(eventRecordLine(next.line)) };
    },
    onRoom: (resume) => out.onDrain(resume),
  };
}
