import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
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
