import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import Database from "better-sqlite3";
import { packageRoot } from "../../src/contract/package-root.js";
import { NO_RECOVERY, recoveryChange } from "../../src/runner/durable/provider-recovery.js";
import {
  RunnerState,
  STATE_FILE,
  type JournalCommand,
  type StateBinding,
} from "../../src/runner/durable/runner-state.js";
import { StateError } from "../../src/storage/private-sqlite.js";

const binding = (overrides: Partial<StateBinding> = {}): StateBinding => ({
  runnerInstanceId: "runner_1",
  environmentLeaseId: "env_1",
  runId: "run_1",
  normalizedSessionId: "session_1",
  turnId: "turn_1",
  itemId: "item_1",
  maxOutboxBytes: 16 * 1024 * 1024,
  p0ReserveBytes: 1024 * 1024,
  ...overrides,
});
const envelope =
  (payloadBytes = 10) =>
  (seq: number) =>
    JSON.stringify({
      sourceEventId: `event_runner_1_${String(seq).padStart(16, "0")}`,
      sourceSeq: seq,
      payload: { text: "x".repeat(payloadBytes) },
    });
const command = (seq: number, overrides: Partial<JournalCommand> = {}): JournalCommand => ({
  commandId: `c${seq}`,
  controllerSeq: seq,
  type: "turn.start",
  issuedAt: "2026-08-07T12:00:00.000Z",
  payload: { text: "go" },
  ...overrides,
});
const refuses = (fn: () => unknown, code: string) =>
  assert.throws(fn, (err: unknown) => err instanceof StateError && err.code === code, code);

describe("runner durable state (SQLite)", () => {
  let root: string;
  let n = 0;
  const dir = () => join(root, `state-${++n}`);
  before(() => {
    root = mkdtempSync(join(tmpdir(), "prp-state-"));
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it("creates a private directory and private files, in WAL mode with synchronous=FULL", () => {
    const d = dir();
    const s = RunnerState.open(d, binding());
    s.admit(1, "item.started", envelope());
    assert.equal(statSync(d).mode & 0o777, 0o700);
    for (const f of [STATE_FILE, `${STATE_FILE}-wal`, `${STATE_FILE}-shm`])
      assert.equal(statSync(join(d, f)).mode & 0o777, 0o600, f);
    s.close();
    const raw = new Database(join(d, STATE_FILE), { readonly: true });
    assert.equal(raw.pragma("journal_mode", { simple: true }), "wal");
    raw.close();
  });

  it("refuses a symlinked or foreign-mode state, a state of another binding, and bad limits", () => {
    const real = dir();
    RunnerState.open(real, binding()).close();
    const link = join(root, `link-${n}`);
    symlinkSync(real, link);
    refuses(() => RunnerState.open(link, binding()), "state_symlink");
    chmodSync(real, 0o755);
    refuses(() => RunnerState.open(real, binding()), "state_wrong_mode");
    chmodSync(real, 0o700);
    chmodSync(join(real, STATE_FILE), 0o644);
    refuses(() => RunnerState.open(real, binding()), "state_wrong_mode");
    chmodSync(join(real, STATE_FILE), 0o600);
    refuses(() => RunnerState.open(real, binding({ runId: "run_2" })), "state_binding_mismatch");
    refuses(() => RunnerState.open(dir(), binding({ p0ReserveBytes: 16 * 1024 * 1024 })), "state_bad_limits");
  });

  it("commits events before they are sent and gives them back byte for byte after a restart", () => {
    const d = dir();
    const s = RunnerState.open(d, binding());
    const sent = [1, 2, 3].map(() => s.admit(1, "item.started", envelope()));
    assert.deepEqual(
      sent.map((a) => a.ok && a.sourceSeq),
      [1, 2, 3],
    );
    s.close();
    const again = RunnerState.open(d, binding());
    assert.deepEqual(
      again.pending().map((p) => p.envelope),
      sent.map((a) => (a.ok ? a.envelope : "")),
    );
    assert.equal(again.counters().nextSourceSeq, 4);
    again.close();
  });

  it("keeps the provider recovery record (§8.3) with the events it is read off, in their transactions, across a restart", () => {
    const d = dir();
    const s = RunnerState.open(d, binding({ maxOutboxBytes: 4000, p0ReserveBytes: 1000 }));
    const admit = (eventType: string, payload: Record<string, unknown>, turnId?: string) =>
      s.admit(1, eventType, envelope(), recoveryChange({ eventType, payload, turnId }));
    assert.deepEqual(s.recovery(), NO_RECOVERY);
    admit("harness.ready", { pid: 1, agent: { capabilities: { loadSession: true } } });
    admit("session.started", { driverSessionId: "acp_session_7" });
    admit("turn.submitted", {}, "turn_1");
    s.close();
    const again = RunnerState.open(d, binding({ maxOutboxBytes: 4000, p0ReserveBytes: 1000 }));
    assert.deepEqual(again.recovery(), {
      driverSessionId: "acp_session_7",
      loadSession: true,
      turnId: "turn_1",
      turnEnded: false,
    });
    // An event the outbox refuses changes nothing: the record never says more than was committed.
    while (again.admit(2, "item.delta", envelope(200)).ok);
    assert.equal(
      again.admit(2, "turn.completed", envelope(200), recoveryChange({ eventType: "turn.completed", payload: {} })).ok,
      false,
    );
    assert.equal(again.recovery().turnEnded, false);
    assert.ok(
      again.admit(0, "turn.completed", envelope(), recoveryChange({ eventType: "turn.completed", payload: {} })).ok,
    );
    assert.equal(again.recovery().turnEnded, true);
    again.close();
  });

  it("reads the recovery record off events: an ACP agent's loadSession, the fake harness's silence, sessions and turns", () => {
    assert.deepEqual(recoveryChange({ eventType: "harness.ready", payload: { pid: 1, agent: { capabilities: {} } } }), {
      loadSession: false,
    });
    assert.deepEqual(
      recoveryChange({ eventType: "harness.ready", payload: { pid: 1 } }),
      { loadSession: null },
      "a harness that says nothing of an agent",
    );
    assert.deepEqual(recoveryChange({ eventType: "session.resumed", payload: { driverSessionId: "s" } }), {
      driverSessionId: "s",
    });
    assert.equal(recoveryChange({ eventType: "session.started", payload: {} }), null);
    assert.deepEqual(recoveryChange({ eventType: "turn.failed", payload: {} }), { turnEnded: true });
    assert.equal(recoveryChange({ eventType: "item.delta", payload: { text: "x" } }), null);
  });

  it("trims on a cumulative ACK and refuses one that goes backward or past what was produced", () => {
    const s = RunnerState.open(dir(), binding());
    for (let i = 0; i < 5; i++) s.admit(2, "item.delta", envelope());
    assert.deepEqual(s.applyAck(3), { ok: true, trimmed: 3 });
    assert.deepEqual(
      s.pending().map((p) => p.sourceSeq),
      [4, 5],
    );
    assert.equal(s.applyAck(2).ok, false);
    assert.equal((s.applyAck(2) as { code: string }).code, "ack_backward");
    assert.equal((s.applyAck(6) as { code: string }).code, "ack_beyond_produced");
    assert.deepEqual(s.applyAck(3), { ok: true, trimmed: 0 }, "a repeated ACK is harmless");
    assert.equal(
      s.counters().outboxBytes,
      s.pending().reduce((b, p) => b + Buffer.byteLength(p.envelope), 0),
    );
    s.close();
  });

  it("refuses non-P0 events past the soft limit, keeps the reserve for P0, and fails closed when P0 overflows", () => {
    const s = RunnerState.open(dir(), binding({ maxOutboxBytes: 4000, p0ReserveBytes: 1000 }));
    let refused: ReturnType<RunnerState["admit"]> | null = null;
    for (let i = 0; i < 100 && !refused; i++) {
      const a = s.admit(2, "item.delta", envelope(200));
      if (!a.ok) refused = a;
    }
    assert.equal(refused && !refused.ok && refused.code, "backpressure");
    assert.equal(s.counters().backpressure, true);
    assert.equal(s.diagnostics().at(-1)?.code, "backpressure");
    assert.ok(s.counters().outboxBytes <= 3000, "the soft limit held");
    assert.ok(s.admit(0, "run.terminal", envelope(200)).ok, "P0 goes into the reserve");
    let p0: ReturnType<RunnerState["admit"]> = { ok: true, sourceSeq: 0, envelope: "" };
    while (p0.ok) p0 = s.admit(0, "runner.diagnostic", envelope(200));
    assert.equal(!p0.ok && p0.code, "p0_storage_exhausted");
    assert.equal(s.counters().lifecycle, "unrecoverable");
    assert.ok(s.counters().peakOutboxBytes <= 4000, "the outbox never passed its limit");
    assert.equal((s.admit(0, "run.terminal", envelope()) as { code: string }).code, "state_unrecoverable");
    s.close();
  });

  it("clears backpressure once an ACK brings the outbox under the soft limit", () => {
    const s = RunnerState.open(dir(), binding({ maxOutboxBytes: 4000, p0ReserveBytes: 1000 }));
    s.setLifecycle("ready");
    while (s.admit(2, "item.delta", envelope(200)).ok);
    assert.equal(s.counters().lifecycle, "backpressure");
    s.applyAck(s.counters().nextSourceSeq - 1);
    assert.equal(s.counters().backpressure, false);
    assert.equal(s.counters().lifecycle, "ready");
    s.close();
  });

  it("keeps backpressure on until a quarter of the soft limit is free (hysteresis), then clears it", () => {
    const s = RunnerState.open(dir(), binding({ maxOutboxBytes: 4000, p0ReserveBytes: 1000 }));
    while (s.admit(2, "item.delta", envelope(200)).ok);
    const held = s.pending();
    // Acknowledge one event at a time: backpressure holds while more than 2250 bytes (3/4 of 3000) remain.
    for (const p of held) {
      s.applyAck(p.sourceSeq);
      const c = s.counters();
      assert.equal(c.backpressure, c.outboxBytes > 2250, `at ${c.outboxBytes} bytes held`);
    }
    s.close();
  });

  it("refuses an event that can never fit its class as event_too_large, without turning backpressure on", () => {
    const s = RunnerState.open(dir(), binding({ maxOutboxBytes: 4000, p0ReserveBytes: 1000 }));
    const p1 = s.admit(1, "item.completed", envelope(3100));
    assert.equal(!p1.ok && p1.code, "event_too_large");
    assert.equal(s.counters().backpressure, false);
    assert.ok(
      s.admit(0, "run.terminal", envelope(3100)).ok,
      "the same size fits as P0, which may use the whole outbox",
    );
    const p0 = s.admit(0, "run.terminal", envelope(4100));
    assert.equal(!p0.ok && p0.code, "event_too_large");
    assert.equal(s.counters().lifecycle !== "unrecoverable", true);
    s.close();
  });

  it("journals a command before its effect and replays its outcome on redelivery", () => {
    const s = RunnerState.open(dir(), binding());
    assert.deepEqual(s.beginCommand(command(1)), { kind: "execute" });
    assert.deepEqual(s.beginCommand(command(1)), { kind: "replay", status: "pending", result: null });
    s.finishCommand("c1", "completed", { accepted: true });
    assert.deepEqual(s.beginCommand(command(1)), { kind: "replay", status: "completed", result: { accepted: true } });
    assert.equal(
      (s.beginCommand(command(1, { payload: { text: "other" } })) as { code: string }).code,
      "command_fingerprint_mismatch",
    );
    assert.equal((s.beginCommand(command(3)) as { code: string }).code, "controller_seq_out_of_order");
    assert.equal(
      (s.beginCommand(command(2, { commandId: "bad\u0007id" })) as { code: string }).code,
      "invalid_command",
    );
    assert.equal(
      (s.beginCommand(command(2, { issuedAt: "x".repeat(65) })) as { code: string }).code,
      "invalid_command",
    );
    s.close();
  });

  it("turns a command pending at restart into indeterminate, which never runs again", () => {
    const d = dir();
    const s = RunnerState.open(d, binding());
    s.beginCommand(command(1));
    s.close(); // the process died between journal and effect
    const again = RunnerState.open(d, binding());
    assert.deepEqual(again.beginCommand(command(1)), { kind: "replay", status: "indeterminate", result: null });
    assert.deepEqual(again.beginCommand(command(2)), { kind: "execute" });
    again.close();
  });

  it("keeps the newest 128 commands and refuses compacted sequence numbers", () => {
    const s = RunnerState.open(dir(), binding());
    for (let seq = 1; seq <= 130; seq++) {
      s.beginCommand(command(seq));
      s.finishCommand(`c${seq}`, "completed", null);
    }
    assert.equal(s.counters().compactedThroughControllerSeq, 2);
    const old = s.beginCommand(command(2));
    assert.equal(old.kind === "rejected" && old.code, "command_history_compacted");
    assert.equal(s.beginCommand(command(3)).kind, "replay");
    s.close();
  });

  it("fails closed at open when the outbox was tampered with", () => {
    const d = dir();
    const s = RunnerState.open(d, binding());
    s.admit(1, "item.started", envelope());
    s.admit(1, "item.started", envelope());
    s.close();
    const raw = new Database(join(d, STATE_FILE));
    raw.prepare("UPDATE outbox SET envelope = ? WHERE source_seq = 2").run(envelope(11)(2));
    raw.close();
    refuses(() => RunnerState.open(d, binding()), "state_outbox_size");
    const raw2 = new Database(join(d, STATE_FILE));
    raw2.prepare("DELETE FROM outbox WHERE source_seq = 1").run();
    raw2.prepare("UPDATE outbox SET byte_size = length(envelope)").run();
    raw2.close();
    refuses(() => RunnerState.open(d, binding()), "state_outbox_not_contiguous");
  });

  it("survives SIGKILL at arbitrary points: what was committed is intact and contiguous", async () => {
    for (const delayMs of [30, 80, 150]) {
      const d = dir();
      mkdirSync(d, { mode: 0o700 });
      const module = join(packageRoot(), "dist/src/runner/durable/runner-state.js");
      const code = `
        const { RunnerState } = await import(${JSON.stringify(module)});
        const s = RunnerState.open(${JSON.stringify(d)}, ${JSON.stringify(binding())});
        let i = 0;
        for (;;) {
          s.admit(1, "item.delta", (seq) => JSON.stringify({ sourceSeq: seq, payload: { n: ++i } }));
          if (i % 7 === 0) s.applyAck(s.counters().nextSourceSeq - 3);
          if (i % 5 === 0) { s.beginCommand({ commandId: "c" + i, controllerSeq: s.counters().lastControllerCommandSeq + 1, type: "turn.start", issuedAt: "t", payload: {} }); }
        }`;
      const child = spawn(process.execPath, ["--input-type=module", "-e", code], { stdio: "ignore" });
      await new Promise((r) => setTimeout(r, delayMs));
      child.kill("SIGKILL");
      await new Promise((r) => child.once("exit", r));
      const s = RunnerState.open(d, binding()); // checks every invariant, or throws
      const c = s.counters();
      const pending = s.pending();
      assert.deepEqual(
        pending.map((p) => p.sourceSeq),
        Array.from({ length: c.nextSourceSeq - 1 - c.ackedSourceSeq }, (_, i) => c.ackedSourceSeq + 1 + i),
      );
      assert.ok(readFileSync(join(d, STATE_FILE)).length > 0);
      s.close();
    }
  });
});
