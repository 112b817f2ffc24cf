import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { STOP_REASON_KIND } from "../../../src/agents/start-causes.js";
import type { PrpEvent } from "../../../src/contract/kinds.js";
import { packageRoot } from "../../../src/contract/package-root.js";
import { argvOf, liveProcesses } from "../../../src/harness/live-processes.js";
import { parseStreamRecord } from "../../../src/runner/stream.js";
import { describeProcesses } from "../../support/processes.js";
import { until } from "../../support/until.js";
import { within } from "../../support/within.js";

/** A command profile of a user catalog: `command` run with no arguments, credentials as given. */
export function commandProfile(
  name: string,
  command: string,
  auth: { env?: string[]; files?: string[] } = {},
  modes: Partial<Record<"ask" | "deny" | "allow-reads" | "forbid", string>> = {},
): Record<string, unknown> {
  return {
    name,
    title: `test agent ${name}`,
    launch: { command, args: [] },
    auth: { env: auth.env ?? [], files: auth.files ?? [], login: `log ${name} in with \`${name} login\`` },
    expects: { protocolVersion: 1, capabilities: [], authMethods: [] },
    permissionModes: { ask: "default", deny: "default", "allow-reads": "default", forbid: "default", ...modes },
    notes: "written by a test",
  };
}

export function writeCatalog(path: string, profiles: Record<string, unknown>[]): string {
  writeFileSync(path, JSON.stringify({ schema: "prp-kit.agent_catalog.v1", agents: profiles }));
  return path;
}

/** A test-agent scenario file in `dir` (the agent's cwd, which the sandbox shows it). */
export function scenarioFile(dir: string, name: string, extra: Record<string, unknown>): string {
  const path = join(dir, `${name}.json`);
  const steps = [
    { kind: "update", update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "done" } } },
  ];
  writeFileSync(
    path,
    JSON.stringify({
      schema: "prp_kit.acp_test_agent.scenario.v1",
      name,
      description: "a start-cause test",
      steps,
      ...extra,
    }),
  );
  return path;
}

export const testAgentOn = (scenario: string): string =>
  `${process.execPath} ${join(packageRoot(), "dist/src/harness/acp/test-agent-process.js")} --scenario ${scenario}`;

/** An executable shell script in `dir`. */
export function shellAgent(dir: string, name: string, body: string): string {
  const path = join(dir, name);
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

export interface LocalRun {
  events: PrpEvent[];
  types: string[];
  terminal: Record<string, any>;
  /** From the runner's start to its run.terminal. */
  ms: number;
  status: number | null;
  stderr: string;
  payload(type: string): Record<string, any> | undefined;
}

const command = (seq: number, type: string, payload: Record<string, unknown>) =>
  `${JSON.stringify({ schema: "paperclip.prp.command.v1", commandId: `command_${seq}`, controllerSeq: seq, type, issuedAt: "2026-08-07T21:00:00.000Z", payload })}\n`;

/**
 * One local run through a real prp-runnerd: run.prepare, session.open, turn.start, stdin held
 * open until the terminal; bounded. Exactly one run.terminal, and last.
 */
export async function runnerdRun(
  args: string[],
  env: Record<string, string> = {},
  timeoutMs = 45_000,
): Promise<LocalRun> {
  const started = Date.now();
  const child = spawn(
    process.execPath,
    [
      join(packageRoot(), "bin/prp-runnerd.js"),
      "--local",
      "--run-id",
      "run_s",
      "--session-id",
      "session_s",
      "--runner-id",
      "runner_s",
      ...args,
    ],
    { env: { ...process.env, ...env }, stdio: ["pipe", "pipe", "pipe"] },
  );
  const events: PrpEvent[] = [];
  let stderr = "";
  let buffered = "";
  let terminalAt = 0;
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  child.stdout.on("data", (d: Buffer) => {
    buffered += d.toString();
    const lines = buffered.split("\n");
    buffered = lines.pop()!;
    for (const line of lines) {
      const record = parseStreamRecord(line);
      if (record?.kind !== "event") continue;
      events.push(record.event);
      if (record.event.eventType === "run.terminal") {
        terminalAt = Date.now();
        child.stdin.end();
      }
    }
  });
  child.stdin.on("error", () => {});
  child.stdin.write(command(1, "run.prepare", { workspace: "local" }));
  child.stdin.write(command(2, "session.open", {}));
  child.stdin.write(command(3, "turn.start", { text: "Fix the failing test." }));
  const status = await within(
    new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code))),
    timeoutMs,
    "prp-runnerd to end the run and exit",
  ).catch((e: Error) => {
    child.kill("SIGKILL");
    throw new Error(`${e.message}; events: ${events.map((x) => x.eventType).join(", ")}; stderr: ${stderr}`);
  });
  const types = events.map((e) => e.eventType);
  assert.equal(types.filter((t) => t === "run.terminal").length, 1, `one run.terminal: ${types.join(", ")}\n${stderr}`);
  assert.equal(types.at(-1), "run.terminal");
  return {
    events,
    types,
    terminal: events.at(-1)!.payload as Record<string, any>,
    ms: terminalAt - started,
    status,
    stderr,
    payload: (type) => events.find((e) => e.eventType === type)?.payload as Record<string, any> | undefined,
  };
}

/** The terminal of a run the agent could not start: failed, harness_process_failed, a typed agent_start cause. */
export function assertStartCause(r: { terminal: Record<string, any> }, code: string): string {
  const t = r.terminal;
  assert.deepEqual(
    [t.turnTerminalState, t.runTerminalState, t.reconciliation.reason],
    ["failed", "failed", "harness_process_failed"],
    JSON.stringify(t),
  );
  assert.deepEqual(
    [t.stopReason?.kind, t.stopReason?.code, t.stopReason?.retryable],
    [STOP_REASON_KIND, code, false],
    JSON.stringify(t.stopReason),
  );
  return t.stopReason.message as string;
}

/** No process whose argv holds `marker` (a path only this test's agent carries) is alive (/proc). */
export async function noneLeft(marker: string): Promise<void> {
  const left = () =>
    liveProcesses()
      .filter((p) => argvOf(p.pid).some((a) => a.includes(marker)))
      .map((p) => p.pid);
  await until(
    () => left().length === 0,
    () => `no process of ${marker} alive: ${describeProcesses(left())}`,
  );
}
