import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { PrpEvent } from "../../../src/contract/kinds.js";
import { packageRoot } from "../../../src/contract/package-root.js";
import { argvOf, liveProcesses } from "../../../src/harness/live-processes.js";
import { describeProcesses } from "../../support/processes.js";
import { until } from "../../support/until.js";

/** The command line of hostile-agent.js in `mode`, recording what reached it in `log`. */
export const hostileAgent = (mode: string, log: string): string =>
  `${process.execPath} ${join(packageRoot(), "dist/test/harness/acp/hostile-agent.js")} --mode ${mode} --log ${log}`;

/** What the agent processes recorded, in order: `start <pid>` and each method they received. */
export const agentLog = (log: string): string[] =>
  existsSync(log) ? readFileSync(log, "utf8").trimEnd().split("\n") : [];

/** The pids of the agent processes started, from their own record. */
export const agentPids = (log: string): number[] =>
  agentLog(log)
    .filter((l) => l.startsWith("start "))
    .map((l) => Number(l.slice(6)));

/**
 * No agent process is alive (read from /proc): each carries its log's path in its argv. Not by
 * the pids it recorded, which in the harness sandbox are its own PID namespace's.
 */
export async function noAgentLeft(log: string): Promise<void> {
  assert.ok(agentPids(log).length > 0, "the agent recorded its start");
  const left = () =>
    liveProcesses()
      .filter((p) => argvOf(p.pid).some((a) => a === log))
      .map((p) => p.pid);
  await until(
    () => left().length === 0,
    () => `the agent processes to be gone: ${describeProcesses(left())}`,
  );
}

/**
 * The requests of a run's record that no event ended: each runtime_request.created without a
 * runtime_request.resolved or runtime_request.cancelled of its requestId. None may stay pending
 * once the run is over.
 */
export function pendingRequests(events: readonly PrpEvent[]): string[] {
  const of = (type: string) => events.filter((e) => e.eventType === type).map((e) => e.payload as Record<string, any>);
  const ended = new Set(
    [...of("runtime_request.resolved"), ...of("runtime_request.cancelled")].map((p) => p.requestId as string),
  );
  return of("runtime_request.created")
    .map((p) => p.request.requestId as string)
    .filter((id) => !ended.has(id));
}

/** Every runtime_request.created has its resolved or cancelled: nothing stays pending after the run. */
export function nonePending(events: readonly PrpEvent[]): void {
  assert.deepEqual(pendingRequests(events), [], "no request is left pending");
}
