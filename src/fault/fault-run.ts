import type { LoadedScript } from "../harness/script-file.js";
import type { PrpEvent } from "../contract/kinds.js";
import { runDurable, type DurableRunFacts } from "./durable-run.js";
import { judgeFault, type FaultVerdict } from "./fault-judge.js";
import type { Fault, FaultPlan } from "./fault-plan.js";
import { seededRandom } from "./seeded-random.js";

export interface FaultRunRequest {
  fault: Fault;
  script: LoadedScript;
  /** Every random choice of the run comes from this seed. */
  seed: number;
  /** An exact point instead of a seeded one, for a fault that `takesAt`. */
  at?: number;
  /** Where the run keeps its state: <dir>/<runId>/. */
  dir: string;
  /** --delay-ms; a fault's own delay wins. */
  delayMs?: number;
  /** The run's protocol version (default 1): the authority registers the run for it and the runner offers 1-N. */
  protocolVersion?: number;
  /** prp-runnerd flags besides the fault's own. */
  runnerArgs?: string[];
  onCommitted?: (event: PrpEvent) => void;
  note?: (text: string) => void;
}

export interface FaultRun {
  plan: FaultPlan;
  facts: DurableRunFacts;
  verdict: FaultVerdict;
}

/** One durable run with a fault injected as planned from the seed, judged from the host's record. */
export async function runFaultOnce(request: FaultRunRequest): Promise<FaultRun> {
  const { fault, script } = request;
  const plan = fault.plan({
    random: seededRandom(request.seed),
    script: script.script,
    ...(request.at !== undefined ? { at: request.at } : {}),
  });
  const delayMs = fault.delayMs ?? request.delayMs;
  const facts = await runDurable({
    script,
    dir: request.dir,
    faults: plan.steps,
    ...(plan.crashAt ? { crashAt: plan.crashAt } : {}),
    ...(request.protocolVersion !== undefined ? { protocolVersion: request.protocolVersion } : {}),
    runnerArgs: [...(fault.runnerArgs ?? []), ...(request.runnerArgs ?? [])],
    ...(fault.relaunchAfterLeaseExpiry ? { relaunchAfterLeaseExpiry: true } : {}),
    ...(delayMs !== undefined ? { delayMs } : {}),
    ...(request.onCommitted ? { onCommitted: request.onCommitted } : {}),
    ...(request.note ? { note: request.note } : {}),
  });
  return { plan, facts, verdict: judgeFault(fault, facts, script.script) };
}
