import { EventSequencer, type EventSource } from "./event-sequencer.js";
import { eventRecordLine } from "./stream.js";

/**
 * Where a run's events go. `emit` gives the event its envelope, checks it against the contract
 * (throwing ContractViolation when it breaks it) and hands it on; it returns false when the
 * far side is behind, and `onDrain` calls back once it has caught up.
 */
export interface EventSink {
  emit(eventType: string, payload: Record<string, unknown>, ids: { turnId?: string; itemId?: string }): boolean;
  onDrain(resume: () => void): void;
}

export interface LineOutput {
  /** One line (no newline); false when the reader is behind. */
  write(line: string): boolean;
  onDrain(resume: () => void): void;
}

/** Local mode: deterministic envelopes (runtime.md §4.5) as paperclip.runner.stream.v1 records. */
export function streamSink(source: EventSource, out: LineOutput): EventSink {
  const sequencer = new EventSequencer(source);
  return {
    emit: (eventType, payload, ids) => out.write(eventRecordLine(sequencer.next(eventType, payload, ids).line)),
    onDrain: (resume) => out.onDrain(resume),
  };
}
