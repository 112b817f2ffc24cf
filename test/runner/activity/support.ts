import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import type { PrpEvent } from "../../../src/contract/kinds.js";
import { CONTEXT_ENV, HELPER_ENV, helperPath } from "../../../src/runner/activity/notification-env.js";

export interface HelperRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the published helper as a harness tool would (its own process, the executable itself, never awaited synchronously: an in-process authority must go on). */
export function helper(env: Record<string, string | undefined>, args: string[], executable = helperPath()): Promise<HelperRun> {
  return new Promise((done) => {
    const clean = Object.fromEntries(Object.entries({ PATH: process.env.PATH, ...env }).filter((e): e is [string, string] => e[1] !== undefined));
    execFile(executable, args, { env: clean, timeout: 120_000 }, (error, stdout, stderr) => {
      done({ status: error ? (typeof error.code === "number" ? error.code : null) : 0, stdout, stderr });
    });
  });
}

/** The runtime-notification variables a process really got, read from /proc (not from what the runner says it set). */
export function notificationEnvOf(pid: number): Record<string, string> {
  const env = Object.fromEntries(readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]));
  assert.ok(env[HELPER_ENV] && env[CONTEXT_ENV], `process ${pid} has both runtime-notification variables`);
  return { [HELPER_ENV]: env[HELPER_ENV]!, [CONTEXT_ENV]: env[CONTEXT_ENV]! };
}

export interface ActivityCall {
  namespace: string;
  activityKey: string;
  /** The helper's exit status. */
  status: number | null;
}

/**
 * The judge of runtime activity against an independent log (the authority's stored events, or the
 * local stream): every call that exited 0 is in the log exactly once, a call refused as invalid
 * (2) or stale (3) is not in it at all, and nothing is in it that no call asked for. A call that
 * ended 4 (the runner went away) may or may not be in it, at most once. Calls name distinct
 * (namespace, activityKey) pairs, so that each is told apart in the log.
 */
export function judgeActivity(calls: ActivityCall[], log: PrpEvent[]): string[] {
  const problems: string[] = [];
  const recorded = log.filter((e) => e.eventType === "runtime.activity.recorded").map((e) => e.payload as { namespace: string; activityKey: string });
  const count = (c: ActivityCall) => recorded.filter((r) => r.namespace === c.namespace && r.activityKey === c.activityKey).length;
  for (const c of calls) {
    const n = count(c);
    const allowed = c.status === 0 ? [1] : c.status === 4 ? [0, 1] : [0];
    if (!allowed.includes(n)) problems.push(`${c.namespace}/${c.activityKey} (helper exit ${c.status}) is in the log ${n} time(s); expected ${allowed.join(" or ")}`);
  }
  for (const r of recorded) {
    if (!calls.some((c) => c.namespace === r.namespace && c.activityKey === r.activityKey)) problems.push(`${r.namespace}/${r.activityKey} is in the log but no call asked for it`);
  }
  return problems;
}
