import type * as T from "../contract/generated/types.js";
import type { Script, Step } from "./fake-harness.js";

/** One event a script makes the runner report, in the order the fake harness plays it. */
export interface ScriptEmission {
  eventType: string;
  /** The harness's own item id (`item_id` of an event step). */
  itemId?: string;
  payload: Record<string, unknown>;
  /** Payload fields whose values come from a command (a resolution, an interrupt's reason), not from the script. */
  fromCommand?: string[];
}

/**
 * The events a script's harness reports, walked the way FakeHarness plays it: session.started
 * and the phase `executing` on session.open, turn.started on turn.start, then each step — an
 * event step as written, a request as runtime_request.created, an answered request as
 * runtime_request.resolved, an awaited interrupt as the phase `awaiting_interrupt` then
 * turn.interrupted, the first result as run.result.proposed (the runner diagnoses any later
 * one), up to an exit step. Logs, delays, workers and terminal proposals report no event.
 * This is the oracle a fault run's committed stream is judged against, so it reads the
 * script, never the runner.
 */
export function scriptEmissions(script: Script): ScriptEmission[] {
  const out: ScriptEmission[] = [
    { eventType: "session.started", payload: {}, fromCommand: ["driverSessionId"] },
    { eventType: "runtime.phase.changed", payload: { phase: "executing" } },
    { eventType: "turn.started", payload: {} },
  ];
  let resultSeen = false;
  for (const step of script.steps as Step[]) {
    switch (step.kind) {
      case "event": {
        const s = step as T.EventStep;
        out.push({ eventType: s.event_type, ...(s.item_id ? { itemId: s.item_id } : {}), payload: s.payload });
        break;
      }
      case "request":
        out.push({ eventType: "runtime_request.created", payload: { request: (step as T.RequestStep).request } });
        break;
      case "await_resolution":
        out.push({
          eventType: "runtime_request.resolved",
          payload: { requestId: (step as T.AwaitResolutionStep).request_id },
          fromCommand: ["resolution"],
        });
        break;
      case "await_interrupt":
        out.push({ eventType: "runtime.phase.changed", payload: { phase: "awaiting_interrupt" } });
        out.push({ eventType: "turn.interrupted", payload: {}, fromCommand: ["reason"] });
        break;
      case "result":
        if (!resultSeen)
          out.push({ eventType: "run.result.proposed", payload: (step as T.ResultOrTerminalStep).payload });
        resultSeen = true;
        break;
      case "exit":
        return out;
      default:
        break; // delay, log, spawn_worker, terminal: nothing the runner reports as an event
    }
  }
  return out;
}
