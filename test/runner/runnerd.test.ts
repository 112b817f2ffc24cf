import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { PrpEvent } from "../../src/contract/kinds.js";
import { packageRoot } from "../../src/contract/package-root.js";
import { scenariosDir } from "../../src/harness/script-file.js";
import { LocalRunnerClient } from "../../src/runner/local-client.js";
import type { CommandReceipt } from "../../src/runner/stream.js";
import { AT, result } from "../contract/samples.js";
import { describeProcesses, liveGroupMembers } from "../support/processes.js";
import { PATIENT_HARNESS } from "../support/scripts.js";
import { until } from "../support/until.js";

/**
 * Starts prp-runnerd --local on a scenario (a name) or a script file (a path). The harness gets
 * 30 s to say ready: on a loaded machine the protocol's 2 s can pass before a Node child starts,
 * and these tests are not about that timeout.
 */
function start(script: string, extraArgs: string[] = []) {
  const events: PrpEvent[] = [];
  const receipts: CommandReceipt[] = [];
  const bad: string[] = [];
  const client = new LocalRunnerClient({
    runId: "run_test",
    sessionId: "session_test",
    runnerId: "runner_test",
    scriptPath: script.includes("/") ? script : join(scenariosDir(), `${script}.json`),
    delayMs: 0,
    extraArgs: [...PATIENT_HARNESS, ...extraArgs],
    onEvent: (e) => events.push(e),
    onReceipt: (r) => receipts.push(r),
    onBadLine: (l) => bad.push(l),
  });
  /** The first event that matches; fails once the runner has exited without it, or after 20 s. */
  const waitFor = async (predicate: (e: PrpEvent) => boolean): Promise<PrpEvent> => {
    let exited = false;
    void client.exited().then(() => (exited = true));
    await until(
      () => exited || events.some(predicate),
      () =>
        `an event the test waits for; the runner wrote ${events.map((e) => e.eventType).join(", ")}; stderr: ${client.stderrTail().join(" | ")}`,
    );
    const hit = events.find(predicate);
    assert.ok(
      hit,
      `the runner exited without the event the test waits for; it wrote ${events.map((e) => e.eventType).join(", ")}; stderr: ${client.stderrTail().join(" | ")}`,
    );
    return hit;
  };
  return { client, events, receipts, bad, waitFor };
}

/** Starts a run of a script that waits for an interrupt; resolves with the harness group once it waits. */
async function startWaiting(script: string) {
  const run = start(script);
  run.client.sendRaw(line(1, "run.prepare"));
  run.client.sendRaw(line(2, "session.open"));
  run.client.sendRaw(line(3, "turn.start"));
  const ready = await run.waitFor((e) => e.eventType === "harness.ready");
  await run.waitFor(
    (e) => e.eventType === "runtime.phase.changed" && (e.payload as any).phase === "awaiting_interrupt",
  );
  return { ...run, harnessGroup: (ready.payload as any).pid as number };
}

const line = (seq: number, type: string, payload: Record<string, unknown> = {}, id = `c${seq}`) =>
  JSON.stringify({
    schema: "paperclip.prp.command.v1",
    commandId: id,
    controllerSeq: seq,
    type,
    issuedAt: AT,
    payload,
  });

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
    assert.deepEqual(
      receipts.map((r) => [r.controllerSeq, r.status, r.code ?? null]),
      [
        [1, "accepted", null],
        [1, "duplicate", null],
        [3, "rejected", "controller_seq_out_of_order"],
        [null, "rejected", "invalid_json"],
        [2, "rejected", "schema_validation"],
        [2, "rejected", "unsupported_command"],
        [3, "accepted", null],
        [4, "accepted", null],
      ],
    );
    assert.equal(events.filter((e) => e.eventType === "harness.starting").length, 1);
    assert.equal((events.at(-1)!.payload as any).runTerminalState, "succeeded");
  });

  it("answers commands canonical JSON cannot hold and lines with a repeated name with typed receipts, and goes on", async () => {
    const { client, receipts, events, waitFor } = start("happy-path");
    client.sendRaw(line(1, "run.prepare", {}, "c\ud800"));
    client.sendRaw(line(1, "run.prepare", { text: "\ud800" }));
    client.sendRaw(line(1, "run.prepare", { values: new Array(12_000).fill(0) }));
    client.sendRaw(line(1, "run.prepare").replace('"payload":{}', '"payload":{},"payload":{"x":1}'));
    client.sendRaw(line(1, "run.prepare"));
    client.sendRaw(line(2, "session.open"));
    client.sendRaw(line(3, "turn.start", { text: "go" }));
    await waitFor((e) => e.eventType === "run.terminal");
    client.close();
    const exit = await client.exited();
    assert.equal(exit.exitCode, 0, client.stderrTail().join("\n"));
    assert.deepEqual(
      receipts.map((r) => [r.controllerSeq, r.status, r.code ?? null]),
      [
        [1, "rejected", "schema_validation"],
        [1, "rejected", "schema_validation"],
        [1, "rejected", "schema_validation"],
        [null, "rejected", "invalid_json"],
        [1, "accepted", null],
        [2, "accepted", null],
        [3, "accepted", null],
      ],
    );
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

  for (const [signal, status] of [
    ["SIGHUP", 129],
    ["SIGINT", 130],
    ["SIGQUIT", 131],
    ["SIGTERM", 143],
  ] as const) {
    it(`sent ${signal} mid-run, cancels the run with one terminal, leaves no process of the harness group and exits ${status}`, async () => {
      const { client, events, waitFor, harnessGroup } = await startWaiting("linger");
      assert.ok(liveGroupMembers(harnessGroup).length >= 2, "harness and its worker are running");
      process.kill(client.pid, signal);
      const terminal = await waitFor((e) => e.eventType === "run.terminal");
      const exit = await client.exited();
      assert.deepEqual([exit.exitCode, exit.signal], [status, null], client.stderrTail().join("\n"));
      assert.equal((terminal.payload as any).reconciliation.reason, "run_cancelled");
      assert.equal(events.filter((e) => e.eventType === "run.terminal").length, 1);
      assert.equal(events.at(-1)!.eventType, "run.terminal");
      assert.deepEqual(
        liveGroupMembers(harnessGroup),
        [],
        `survivors: ${describeProcesses(liveGroupMembers(harnessGroup))}`,
      );
      assert.deepEqual(liveGroupMembers(client.pid), []);
    });
  }

  it("reports the harness's own outcome when stdin ends after the harness exited 0 with a result, before its group is reaped", async () => {
    // A harness whose background child keeps its stdout open: after the leader exits 0 the
    // runner waits --shutdown-grace-ms for the output to drain, and the controller closes inside that window.
    const dir = mkdtempSync(join(tmpdir(), "prp-exited-"));
    try {
      const harness = join(dir, "harness.sh");
      writeFileSync(
        harness,
        `#!/bin/sh\nsleep 30 &\nexec "${process.execPath}" "${join(packageRoot(), "dist/src/harness/fake-harness-process.js")}" "$@"\n`,
        { mode: 0o755 },
      );
      const script = join(dir, "result-then-exit.json");
      writeFileSync(
        script,
        JSON.stringify({
          schema: "paperclip.fake_harness.script.v1",
          name: "result-then-exit",
          steps: [
            { kind: "result", payload: result() },
            { kind: "exit", code: 0 },
          ],
        }),
      );
      const run = start(script, ["--fake-harness", harness, "--shutdown-grace-ms", "3000"]);
      run.client.sendRaw(line(1, "run.prepare"));
      run.client.sendRaw(line(2, "session.open"));
      run.client.sendRaw(line(3, "turn.start"));
      const leader = ((await run.waitFor((e) => e.eventType === "harness.ready")).payload as any).pid as number;
      await run.waitFor((e) => e.eventType === "run.result.proposed");
      // Gone from /proc, not only a zombie: the runner has reaped it, so it has seen the exit.
      await until(
        () => !existsSync(`/proc/${leader}`),
        () => `the harness leader ${leader} to exit and be reaped`,
      );
      assert.ok(
        !run.events.some((e) => e.eventType === "harness.exited"),
        "the controller closes before the harness is reaped (inside the drain window)",
      );
      run.client.close();
      const terminal = (await run.waitFor((e) => e.eventType === "run.terminal")).payload as any;
      await run.client.exited();
      assert.equal(terminal.runTerminalState, "succeeded", JSON.stringify(terminal.reconciliation));
      assert.equal(terminal.reconciliation.reason, "successful_process_and_result");
      assert.deepEqual(liveGroupMembers(leader), []);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("treats a closed stdout (EPIPE) as the controller closing: no exception, the harness group ended, exit 0", async () => {
    const child = spawn(
      process.execPath,
      [
        join(packageRoot(), "bin/prp-runnerd.js"),
        "--local",
        "--run-id",
        "run_epipe",
        "--session-id",
        "session_epipe",
        "--runner-id",
        "runner_epipe",
        "--script",
        "linger",
        "--delay-ms",
        "0",
        ...PATIENT_HARNESS,
      ],
      { stdio: ["pipe", "pipe", "pipe"] },
    );
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<[number | null, string | null]>((resolve) =>
      child.on("exit", (code, signal) => resolve([code, signal])),
    );
    let harnessGroup = 0;
    try {
      let out = "";
      const waiting = new Promise<void>((resolve) =>
        child.stdout.on("data", (chunk: Buffer) => {
          out += chunk.toString();
          const pid = /"eventType":"harness\.ready".*?"pid":(\d+)/.exec(out);
          if (pid) harnessGroup = Number(pid[1]);
          if (out.includes('"phase":"awaiting_interrupt"')) resolve();
        }),
      );
      ["run.prepare", "session.open", "turn.start"].forEach((type, i) => child.stdin.write(`${line(i + 1, type)}\n`));
      await Promise.race([
        waiting,
        exited.then((e) => assert.fail(`the runner exited ${e} before its harness waited: ${stderr}`)),
      ]);
      assert.ok(harnessGroup > 0 && liveGroupMembers(harnessGroup).length >= 2, "harness and its worker are running");
      child.stdout.destroy(); // the controller stops reading
      child.stdin.write(`${line(1, "run.prepare")}\n`); // its receipt is the next write: EPIPE
      const [code, signal] = await Promise.race([
        exited,
        sleep(20_000).then(() => assert.fail(`the runner did not exit after EPIPE: ${stderr}`)),
      ]);
      assert.deepEqual([code, signal], [0, null], stderr);
      assert.doesNotMatch(stderr, /Error|at .*\.js:\d+/, "no exception");
      assert.match(stderr, /stdout closed \(EPIPE\).*closing the run/);
      assert.deepEqual(
        liveGroupMembers(harnessGroup),
        [],
        `survivors: ${describeProcesses(liveGroupMembers(harnessGroup))}`,
      );
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      if (harnessGroup > 0 && liveGroupMembers(harnessGroup).length > 0) process.kill(-harnessGroup, "SIGKILL");
    }
  });

  it("SIGKILLed mid-run (the runner alone, not its group), leaves no harness process: its orphan guard ends the group within 2 s", async () => {
    const { client, harnessGroup } = await startWaiting("linger");
    try {
      assert.ok(liveGroupMembers(harnessGroup).length >= 2, "harness and its worker are running");
      process.kill(client.pid, "SIGKILL");
      await until(
        () => liveGroupMembers(harnessGroup).length === 0,
        () => `the harness group to end; survivors: ${describeProcesses(liveGroupMembers(harnessGroup))}`,
      );
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
      runId: `run_${"r".repeat(156)}`,
      sessionId: `session_${"s".repeat(152)}`,
      runnerId: `runner_${"n".repeat(153)}`,
      scriptPath: join(scenariosDir(), "happy-path.json"),
      delayMs: 0,
      extraArgs: PATIENT_HARNESS,
      onEvent: (e) => events.push(e),
      onReceipt: () => {},
      onBadLine: (l) => bad.push(l),
    });
    try {
      client.send("run.prepare");
      client.send("session.open");
      client.send("turn.start", { text: "go" });
      await until(
        () => events.some((e) => e.eventType === "run.terminal"),
        () =>
          `run.terminal; events ${events.map((e) => e.eventType).join(",")}; bad lines ${bad.length}; stderr: ${client.stderrTail().join(" | ")}`,
        60_000,
      );
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
    const res = spawnSync(process.execPath, [join(packageRoot(), "bin/prp-runnerd.js"), "--local", "--run-id", "r"], {
      encoding: "utf8",
    });
    assert.equal(res.status, 2);
    assert.match(res.stderr, /--session-id is required/);
    const meta = spawnSync(process.execPath, [join(packageRoot(), "bin/prp-runnerd.js"), "--build-metadata"], {
      encoding: "utf8",
    });
    assert.deepEqual(JSON.parse(meta.stdout).prp, { min: 1, max: 3 });
  });
});
