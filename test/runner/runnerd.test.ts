import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import type { PrpEvent } from "../../src/contract/kinds.js";
import { packageRoot } from "../../src/contract/package-root.js";
import { scenariosDir } from "../../src/harness/script-file.js";
import { LocalRunnerClient } from "../../src/runner/local-client.js";
import type { CommandReceipt } from "../../src/runner/stream.js";
import { AT } from "../contract/samples.js";
import { describeProcesses, liveGroupMembers } from "../support/processes.js";
import { until } from "../support/until.js";

function start(script: string) {
  const events: PrpEvent[] = [];
  const receipts: CommandReceipt[] = [];
  const bad: string[] = [];
  let onEvent: ((e: PrpEvent) => void) | null = null;
  const client = new LocalRunnerClient({
    runId: "run_test", sessionId: "session_test", runnerId: "runner_test", scriptPath: join(scenariosDir(), `${script}.json`), delayMs: 0,
    onEvent: (e) => { events.push(e); onEvent?.(e); },
    onReceipt: (r) => receipts.push(r),
    onBadLine: (l) => bad.push(l),
  });
  const waitFor = (predicate: (e: PrpEvent) => boolean) =>
    new Promise<PrpEvent>((resolve) => {
      const hit = events.find(predicate);
      if (hit) return resolve(hit);
      onEvent = (e) => { if (predicate(e)) resolve(e); };
    });
  return { client, events, receipts, bad, waitFor };
}

/** Starts a run of a script that waits for an interrupt; resolves with the harness group once it waits. */
async function startWaiting(script: string) {
  const run = start(script);
  run.client.sendRaw(line(1, "run.prepare"));
  run.client.sendRaw(line(2, "session.open"));
  run.client.sendRaw(line(3, "turn.start"));
  const ready = await run.waitFor((e) => e.eventType === "harness.ready");
  await run.waitFor((e) => e.eventType === "runtime.phase.changed" && (e.payload as any).phase === "awaiting_interrupt");
  return { ...run, harnessGroup: (ready.payload as any).pid as number };
}

const line = (seq: number, type: string, payload: Record<string, unknown> = {}, id = `c${seq}`) =>
  JSON.stringify({ schema: "paperclip.prp.command.v1", commandId: id, controllerSeq: seq, type, issuedAt: AT, payload });

describe("prp-runnerd --local", () => {
  it("answers duplicate, out-of-sequence and malformed command lines with receipts and goes on", async () => {
    const { client, receipts, events, waitFor } = start("happy-path");
    client.sendRaw(line(1, "run.prepare"));
    client.sendRaw(line(1, "run.prepare")); // the same command again: duplicate, no second harness
    client.sendRaw(line(3, "session.open")); // seq 2 is next
    client.sendRaw("{not json");
    client.sendRaw(line(2, "session.goal.get")); // a valid v1 command? no: a v2 type on a v1 envelope
    client.sendRaw(line(2, "runner.drain")); // valid but unsupported: consumes seq 2
    client.sendRaw(line(3, "session.open"));
    client.sendRaw(line(4, "turn.start", { text: "go" }));
    await waitFor((e) => e.eventType === "run.terminal");
    client.close();
    await client.exited();
    assert.deepEqual(receipts.map((r) => [r.controllerSeq, r.status, r.code ?? null]), [
      [1, "accepted", null],
      [1, "duplicate", null],
      [3, "rejected", "controller_seq_out_of_order"],
      [null, "rejected", "invalid_json"],
      [2, "rejected", "schema_validation"],
      [2, "rejected", "unsupported_command"],
      [3, "accepted", null],
      [4, "accepted", null],
    ]);
    assert.equal(events.filter((e) => e.eventType === "harness.starting").length, 1);
    assert.equal((events.at(-1)!.payload as any).runTerminalState, "succeeded");
  });

  it("closes the run as controller_closed when its stdin ends, and ends the harness group", async () => {
    const { client, waitFor, harnessGroup } = await startWaiting("linger");
    client.close();
    const terminal = await waitFor((e) => e.eventType === "run.terminal");
    const exit = await client.exited();
    assert.equal(exit.exitCode, 0);
    assert.equal((terminal.payload as any).reconciliation.reason, "controller_closed");
    assert.deepEqual(liveGroupMembers(harnessGroup), []);
  });

  it("sent SIGTERM mid-run, cancels the run, leaves no orphan and exits 143", async () => {
    const { client, waitFor, harnessGroup } = await startWaiting("linger");
    assert.ok(liveGroupMembers(harnessGroup).length >= 2, "harness and its worker are running");
    process.kill(client.pid, "SIGTERM");
    const terminal = await waitFor((e) => e.eventType === "run.terminal");
    const exit = await client.exited();
    assert.equal(exit.exitCode, 143);
    assert.equal((terminal.payload as any).reconciliation.reason, "run_cancelled");
    assert.deepEqual(liveGroupMembers(harnessGroup), []);
    assert.deepEqual(liveGroupMembers(client.pid), []);
  });

  it("SIGKILLed mid-run (the runner alone, not its group), leaves no harness process: its orphan guard ends the group within 2 s", async () => {
    const { client, harnessGroup } = await startWaiting("linger");
    try {
      assert.ok(liveGroupMembers(harnessGroup).length >= 2, "harness and its worker are running");
      process.kill(client.pid, "SIGKILL");
      await until(() => liveGroupMembers(harnessGroup).length === 0, () => `the harness group to end; survivors: ${describeProcesses(liveGroupMembers(harnessGroup))}`, 2_000);
      assert.equal((await client.exited()).signal, "SIGKILL");
    } finally {
      if (liveGroupMembers(harnessGroup).length > 0) process.kill(-harnessGroup, "SIGKILL");
      await client.terminate();
    }
  });

  it("runs a whole run with run, session and runner ids of 160 characters, the longest it accepts", async () => {
    const events: PrpEvent[] = [];
    const bad: string[] = [];
    const client = new LocalRunnerClient({
      runId: `run_${"r".repeat(156)}`, sessionId: `session_${"s".repeat(152)}`, runnerId: `runner_${"n".repeat(153)}`,
      scriptPath: join(scenariosDir(), "happy-path.json"), delayMs: 0, extraArgs: ["--harness-ready-ms", "30000"],
      onEvent: (e) => events.push(e), onReceipt: () => {}, onBadLine: (l) => bad.push(l),
    });
    try {
      client.send("run.prepare");
      client.send("session.open");
      client.send("turn.start", { text: "go" });
      await until(() => events.some((e) => e.eventType === "run.terminal"), () => `run.terminal; events ${events.map((e) => e.eventType).join(",")}; bad lines ${bad.length}; stderr: ${client.stderrTail().join(" | ")}`, 60_000);
      client.close();
      await client.exited();
    } finally {
      await client.terminate();
    }
    assert.deepEqual(bad, []);
    assert.equal((events.at(-1)!.payload as any).runTerminalState, "succeeded");
    assert.ok(events.every((e) => e.sourceEventId.length <= 160));
    assert.equal(new Set(events.map((e) => e.sourceEventId)).size, events.length);
  });

  it("refuses to start without its required flags, saying which", () => {
    const res = spawnSync(process.execPath, [join(packageRoot(), "bin/prp-runnerd.js"), "--local", "--run-id", "r"], { encoding: "utf8" });
    assert.equal(res.status, 2);
    assert.match(res.stderr, /--session-id is required/);
    const meta = spawnSync(process.execPath, [join(packageRoot(), "bin/prp-runnerd.js"), "--build-metadata"], { encoding: "utf8" });
    assert.deepEqual(JSON.parse(meta.stdout).prp, { min: 1, max: 3 });
  });
});
