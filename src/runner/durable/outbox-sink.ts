import { encode } from "../../contract/encode.js";
import { priorityOf } from "../../contract/priority.js";
import { buildEvent } from "../event-envelope.js";
import type { EventSink } from "../event-sink.js";
import type { Admission, RunnerState } from "./runner-state.js";

export interface DurableIdentity {
  runnerInstanceId: string;
  runId: string;
  normalizedSessionId: string;
  turnId: string;
  itemId: string;
}

export interface OutboxSinkHooks {
  /** An admitted event's exact bytes, to send now if a connection is up. */
  send(envelope: string, sourceSeq: number): void;
  /** An event the outbox refused (backpressure, P0 exhaustion): never silent. */
  refused(eventType: string, admission: Extract<Admission, { ok: false }>): void;
  /** Whether the outbox has room again; `onDrain` waits for that. */
  waitForRoom(resume: () => void): void;
}

/**
 * Durable mode: every event is committed to the outbox before it is sent (write before send),
 * under `event_<runnerInstanceId>_<seq, 16 digits>` (runtime.md §5.6). The authority checks that
 * an event's turn and item are the run's, so a harness's own item id travels in the payload as
 * `providerItemId` and the envelope carries the run's turn and item.
 */
export function outboxSink(state: RunnerState, identity: DurableIdentity, hooks: OutboxSinkHooks): EventSink {
  return {
    emit(eventType, payload, ids) {
      const body = ids.itemId && ids.itemId !== identity.itemId ? { ...payload, providerItemId: ids.itemId } : payload;
      const admission = state.admit(priorityOf(eventType, payload.code), eventType, (sourceSeq) =>
        encode(
          buildEvent({
            sourceSeq,
            sourceEventId: `event_${identity.runnerInstanceId}_${String(sourceSeq).padStart(16, "0")}`,
            emittedAt: new Date().toISOString(),
            sourceInstanceId: identity.runnerInstanceId,
            runId: identity.runId,
            normalizedSessionId: identity.normalizedSessionId,
            eventType,
            payload: body,
            turnId: ids.turnId ? identity.turnId : undefined,
            itemId: ids.itemId ? identity.itemId : undefined,
          }),
          "event",
        ),
      );
      if (!admission.ok) {
        hooks.refused(eventType, admission);
        return false;
      }
      hooks.send(admission.envelope, admission.sourceSeq);
      return !state.counters().backpressure;
    },
    onDrain: (resume) => hooks.waitForRoom(resume),
  };
}
