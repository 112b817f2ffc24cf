import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { PrpEvent } from "../../../src/contract/kinds.js";
import { scenariosDir } from "../../../src/harness/script-file.js";
import { LocalRunnerClient } from "../../../src/runner/local-client.js";
import { PATIENT_HARNESS } from "../../support/scripts.js";
import { until } from "../../support/until.js";
import { CONTEXT_ENV, HELPER_ENV, SECRET_ENV, helperPath } from "../../../src/harness/notification-env.js";

export interface HelperRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the published helper as a harness tool would (its own process, the executable itself, never awaited synchronously: an in-process authority must go on). */
export function helper(
  env: Record<string, string | undefined>,
  args: string[],
  executable = helperPath(),
): Promise<HelperRun> {
  return new Promise((done) => {
    const clean = Object.fromEntries(
      Object.entries({ PATH: process.env.PATH, ...env }).filter((e): e is [string, string] => e[1] !== undefined),
    );
    execFile(executable, args, { env: clean, timeout: 120_000 }, (error, stdout, stderr) => {
      done({ status: error ? (typeof error.code === "number" ? error.code : null) : 0, stdout, stderr });
    });
  });
}

/** The whole environment a process really got, read from /proc (not from what the runner says it set). */
export function environOf(pid: number): Record<string, string> {
  return Object.fromEntries(
    readFileSync(`/proc/${pid}/environ`, "utf8")
      .split("\0")
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
  );
}

/** The runtime-notification variables a process really got: the helper, the descriptor and its generation's secret. */
export function notificationEnvOf(pid: number): Record<string, string> {
  const env = environOf(pid);
  assert.ok(
    env[HELPER_ENV] && env[CONTEXT_ENV] && env[SECRET_ENV],
    `process ${pid} has the three runtime-notification variables`,
  );
  return { [HELPER_ENV]: env[HELPER_ENV]!, [CONTEXT_ENV]: env[CONTEXT_ENV]!, [SECRET_ENV]: env[SECRET_ENV]! };
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
  const recorded = log
    .filter((e) => e.eventType === "runtime.activity.recorded")
    .map((e) => e.payload as { namespace: string; activityKey: string });
  const count = (c: ActivityCall) =>
    recorded.filter((r) => r.namespace === c.namespace && r.activityKey === c.activityKey).length;
  for (const c of calls) {
    const n = count(c);
    const allowed = c.status === 0 ? [1] : c.status === 4 ? [0, 1] : [0];
    if (!allowed.includes(n))
      problems.push(
        `${c.namespace}/${c.activityKey} (helper exit ${c.status}) is in the log ${n} time(s); expected ${allowed.join(" or ")}`,
      );
  }
  for (const r of recorded) {
    if (!calls.some((c) => c.namespace === r.namespace && c.activityKey === r.activityKey))
      problems.push(`${r.namespace}/${r.activityKey} is in the log but no call asked for it`);
  }
  return problems;
}

/**
 * Run A's harness turning on run B: with A's secret it asks B's socket for B's
 * context, and records with the context B's own harness captured; every call must be refused
 * (exit 3, generation_refused). Returns the calls, for the judge of B's log, and B's context.
 */
export async function crossRunCalls(
  a: Record<string, string>,
  b: Record<string, string>,
): Promise<{ calls: ActivityCall[]; context: string }> {
  const intoB = { ...a, [CONTEXT_ENV]: b[CONTEXT_ENV]! };
  const asked = await helper(intoB, ["notification-context"]);
  assert.equal(asked.status, 3, asked.stderr);
  assert.match(asked.stderr, /generation_refused/);
  assert.equal(asked.stdout, "", "B's context is not handed to A");
  const context = await helper(b, ["notification-context"]);
  assert.equal(context.status, 0, context.stderr);
  const calls: ActivityCall[] = [];
  const ran = await helper(intoB, ["record-activity", context.stdout.trim(), "paperclip.test", "from-another-run"]);
  assert.match(ran.stderr, /generation_refused/);
  calls.push({ namespace: "paperclip.test", activityKey: "from-another-run", status: ran.status });
  return { calls, context: context.stdout.trim() };
}

/** A local runner on the linger script, once its harness waits for an interrupt: its events, and the environment its harness really got. */
/** `runnerd`: another prp-runnerd entry (the fault framework's, for a crash point in `env`). */
export async function waitingRunner(runId: string, env?: Record<string, string>, runnerd?: string) {
  const events: PrpEvent[] = [];
  const client = new LocalRunnerClient({
    runId,
    sessionId: `session_${runId}`,
    runnerId: `runner_${runId}`,
    scriptPath: join(scenariosDir(), "linger.json"),
    delayMs: 0,
    extraArgs: PATIENT_HARNESS,
    ...(env ? { env } : {}),
    ...(runnerd ? { runnerd } : {}),
    onEvent: (e) => events.push(e),
    onReceipt: () => {},
    onBadLine: () => {},
  });
  const describe = () =>
    `events: ${events.map((e) => e.eventType).join(", ")}; stderr: ${client.stderrTail().join(" | ")}`;
  client.send("run.prepare");
  client.send("session.open");
  client.send("turn.start", { turnId: "turn_1" });
  await until(
    () =>
      events.some((e) => e.eventType === "runtime.phase.changed" && (e.payload as any).phase === "awaiting_interrupt"),
    describe,
    30_000,
  );
  const pid = (events.find((e) => e.eventType === "harness.ready")!.payload as any).pid as number;
  return { client, events, describe, env: notificationEnvOf(pid) };
}
