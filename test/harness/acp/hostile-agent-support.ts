import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { packageRoot } from "../../../src/contract/package-root.js";
import { describeProcesses, liveGroupMembers } from "../../support/processes.js";
import { until } from "../../support/until.js";

/** The command line of hostile-agent.js in `mode`, recording what reached it in `log`. */
export const hostileAgent = (mode: string, log: string): string =>
  `${process.execPath} ${join(packageRoot(), "dist/test/harness/acp/hostile-agent.js")} --mode ${mode} --log ${log}`;

/** What the agent processes recorded, in order: `start <pid>` and each method they received. */
export const agentLog = (log: string): string[] => (existsSync(log) ? readFileSync(log, "utf8").trimEnd().split("\n") : []);

/** The pids of the agent processes started, from their own record. */
export const agentPids = (log: string): number[] => agentLog(log).filter((l) => l.startsWith("start ")).map((l) => Number(l.slice(6)));

/** No process of any agent group the log names is alive (read from /proc). */
export async function noAgentLeft(log: string): Promise<void> {
  const pids = agentPids(log);
  assert.ok(pids.length > 0, "the agent recorded its start");
  for (const pid of pids) await until(() => liveGroupMembers(pid).length === 0, () => `agent group ${pid} to be gone: ${describeProcesses(liveGroupMembers(pid))}`, 5_000);
}
