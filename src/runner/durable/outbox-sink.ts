import type { ContractError } from "../../contract/errors.js";
import { priorityOf } from "../../contract/priority.js";
import { sequencedId } from "../../contract/ids.js";
import { GOAL_EVENTS } from "../../contract/version-gates.js";
import { admittedLine, buildEvent } from "../event-envelope.js";
import { refusedUncanonical, type EventSink, type PendingEvent } from "../event-sink.js";
import { credentialRevisionOf } from "../credentials/credentials-event.js";
import { recoveryChange } from "./provider-recovery.js";
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
  /** The outbox cannot take the state's events any more (it is unrecoverable): the runner must stop. */
  unrecoverable(admission: Extract<Admission, { ok: false }>): void;
  /** A backpressure episode began; its P0 runner.backpressure report is already admitted. */
  backpressure(message: string): void;
  /** Calls `resume` once when ACKs have brought the outbox back under its soft limit. */
  waitForRoom(resume: () => void): void;
}

/** An event the authority's ingest would refuse (src/contract/admission.ts): it is never committed. */
class NoCanonicalForm extends Error {
  constructor(readonly error: ContractError) {
    super(error.message);
  }
}

/**
 * Durable mode: every event is committed to the outbox before it is sent (write before send),
 * under `event_<runnerInstanceId>_<seq, 16 digits>` (runtime.md §5.6). The authority checks that
 * an event's turn and item are the run's, so the envelope carries the run's turn and item and a
 * harness's own item id travels beside them as the envelope's `providerItemId` (the envelope is
 * open; a payload may be closed, and is sent as the harness made it).
 *
 * Over the soft limit an event is `full`, not lost: the gate in front keeps it and offers it
 * again when ACKs free room. Each episode — from the first `full` until that event is in — is
 * reported once, at P0, which the reserve admits (wire.md §7.11); reporting it again on every
 * retry would fill the room the ACKs freed and never let the event in.
 */
export function outboxSink(state: RunnerState, identity: DurableIdentity, hooks: OutboxSinkHooks): EventSink {
  let reported = false;
  const admit = (e: PendingEvent): Admission => {
    const priority = priorityOf(e.eventType, e.payload.code);
    const admission = state.admit(
      priority,
      e.eventType,
      (sourceSeq) => {
        const admitted = admittedLine(
          buildEvent({
            sourceSeq,
            sourceEventId: sequencedId("event", identity.runnerInstanceId, sourceSeq, 16),
            emittedAt: new Date().toISOString(),
            sourceInstanceId: identity.runnerInstanceId,
            runId: identity.runId,
            normalizedSessionId: identity.normalizedSessionId,
            eventType: e.eventType,
            payload: e.payload,
            turnId: e.turnId ? identity.turnId : undefined,
            itemId: e.itemId ? identity.itemId : undefined,
            providerItemId: e.itemId !== identity.itemId ? e.itemId : undefined,
            schemaVersion: e.schemaVersion,
          }),
        );
        // Thrown out of the outbox's transaction, so that no sequence number is used.
        if ("noCanonicalForm" in admitted) throw new NoCanonicalForm(admitted.noCanonicalForm);
        return admitted.line;
      },
      recoveryChange(e),
      GOAL_EVENTS.has(e.eventType) ? e.payload : null,
      admittedCredential(state, e),
    );
    if (admission.ok) hooks.send(admission.envelope, admission.sourceSeq);
    return admission;
  };
  return {
    offer(e) {
      let admission: Admission;
      try {
        admission = admit(e);
      } catch (err) {
        if (err instanceof NoCanonicalForm) return refusedUncanonical(err.error);
        throw err;
      }
      if (admission.ok) {
        reported = false; // the episode ends when the event that waited is in
        return { kind: "admitted", congested: state.counters().backpressure };
      }
      if (admission.code === "backpressure") {
        if (!reported) {
          reported = true;
          const c = state.counters();
          admit({
            eventType: "runner.backpressure",
            payload: {
              code: "backpressure",
              message: admission.message,
              outboxBytes: c.outboxBytes,
              softLimitBytes: state.binding.maxOutboxBytes - state.binding.p0ReserveBytes,
            },
          });
          hooks.backpressure(admission.message);
        }
        return { kind: "full" };
      }
      if (admission.code === "p0_storage_exhausted" || admission.code === "state_unrecoverable")
        hooks.unrecoverable(admission);
      return { kind: "refused", code: admission.code, message: admission.message };
    },
    onRoom: (resume) => hooks.waitForRoom(resume),
  };
}

/** A credential event's pending mark is cleared in the transaction that admits it: a restart then never emits it twice. */
function admittedCredential(state: RunnerState, e: PendingEvent): (() => void) | undefined {
  const credential = credentialRevisionOf(e.eventType, e.payload);
  return credential ? () => state.credentials.admitted(credential.bindingId, credential.revision) : undefined;
}
