import type { PrpCommand } from "../../src/contract/kinds.js";
import type { RunMachine, RunEffect } from "../../src/runner/run-machine.js";
import { AT } from "../contract/samples.js";

let seq = 0;
/** A command envelope of `version` with the next controllerSeq. */
export const command = (type: string, payload: Record<string, unknown> = {}, version = 1): PrpCommand =>
  ({
    schema: `paperclip.prp.command.v${version}`,
    commandId: `c${++seq}`,
    controllerSeq: seq,
    type,
    issuedAt: AT,
    payload,
  }) as PrpCommand;

/** Drives a machine through run.prepare and session.open with a harness that answers at once; the effects, in order. */
export function throughSessionOpen(m: RunMachine): RunEffect[] {
  return [
    ...m.apply(command("run.prepare")),
    ...m.onFact({ kind: "ready", pid: 42, resumePoint: {} }),
    ...m.apply(command("session.open")),
    ...m.onFact({ kind: "event", eventType: "session.started", payload: { driverSessionId: "d" } }),
    ...m.onFact({ kind: "event", eventType: "runtime.phase.changed", payload: { phase: "executing" } }),
  ];
}
