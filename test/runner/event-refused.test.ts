import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { PrpEvent } from "../../src/contract/kinds.js";
import { FakeHarnessDriver } from "../../src/harness/fake-driver.js";
import { LocalRunnerClient } from "../../src/runner/local-client.js";
import { AT, result } from "../contract/samples.js";
import { resolveScriptPath } from "../../src/harness/script-file.js";
import { DurableRunner } from "../../src/runner/durable/durable-runner.js";
import {
  DEFAULT_MAX_OUTBOX_BYTES,
  DEFAULT_P0_RESERVE_BYTES,
  RunnerState,
} from "../../src/runner/durable/runner-state.js";
import { BUILD, durableRunner, prpEvent, SecureAuthority } from "../security/support.js";
import { within } from "../support/within.js";
import { PATIENT_HARNESS } from "../support/scripts.js";

/** A script whose item.completed carries `payload`: something the runner can never carry. */
function refusedEventScript(dir: string, name: string, payload: Record<string, unknown>): string {
  const path = join(dir, `${name}.json`);
  writeFileSync(
    path,
    JSON.stringify({
      schema: "paperclip.fake_harness.script.v1",
      name,
      steps: [
        { kind: "event", event_type: "item.started", item_id: "item_small", payload: { kind: "agent_message" } },
        {
          kind: "event",
          event_type: "item.completed",
          item_id: "item_huge",
          payload: { kind: "agent_message", ...payload },
        },
        { kind: "result", payload: result() },
        { kind: "exit", code: 0 },
      ],
    }),
  );
  return path;
}

/** A script whose one event is `bytes` long: more than the runner can ever carry. */
const hugeEventScript = (dir: string, bytes: number): string =>
  refusedEventScript(dir, `huge-${bytes}`, { text: "x".repeat(bytes) });

/** Events the contract's schema accepts but canonical JSON cannot hold, so no authority could store them. */
const UNCANONICAL: Record<string, Record<string, unknown>> = {
  "a lone surrogate (a split emoji)": { text: "split emoji \ud83d" },
  "more than 10,000 JSON values": { values: new Array(10_001).fill(0) },
};

function assertFailedClosed(events: PrpEvent[]): void {
  const types = events.map((e) => e.eventType);
  assert.ok(types.includes("item.started"), "what came before the refused event is delivered");
  assert.ok(!events.some((e) => e.eventType === "item.completed"), "the refused event is not carried");
  const diagnostic = events.find(
    (e) => e.eventType === "runner.diagnostic" && (e.payload as { code?: string }).code === "event_refused",
  );
  assert.ok(diagnostic, `a runner.diagnostic event_refused is reported (events: ${types.join(", ")})`);
  assert.equal(diagnostic.priority, 0, "at P0: never coalesced or dropped");
  assert.match((diagnostic.payload as { message: string }).message, /item\.completed/);
  const terminal = events.at(-1)!;
  assert.equal(terminal.eventType, "run.terminal");
  const payload = terminal.payload as { runTerminalState: string; stopReason?: { code: string } };
  assert.equal(payload.runTerminalState, "failed", "never a success");
  assert.equal(payload.stopReason?.code, "event_refused");
}

describe("an event that can never be carried fails the run closed (never silently dropped)", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "prp-refused-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const runLocal = async (scriptPath: string): Promise<PrpEvent[]> => {
    const events: PrpEvent[] = [];
    const client = new LocalRunnerClient({
      runId: "run_refused",
      sessionId: "session_refused",
      runnerId: "runner_refused",
      scriptPath,
      delayMs: 0,
      extraArgs: [...PATIENT_HARNESS, "--harness-max-line-bytes", "2000000"],
      onEvent: (e) => {
        events.push(e);
        if (e.eventType === "run.terminal") client.close();
      },
      onReceipt: () => {},
      onBadLine: (l) => assert.fail(`bad stream line ${l.slice(0, 200)}`),
    });
    ["run.prepare", "session.open", "turn.start"].forEach((type, i) =>
      client.sendRaw(
        JSON.stringify({
          schema: "paperclip.prp.command.v1",
          commandId: `c${i + 1}`,
          controllerSeq: i + 1,
          type,
          issuedAt: AT,
          payload: {},
        }),
      ),
    );
    const exit = await client.exited();
    assert.equal(exit.exitCode, 0, client.stderrTail().join("\n"));
    return events;
  };

  it("local mode: an event over the 1 MiB frame limit", async () => {
    assertFailedClosed(await runLocal(hugeEventScript(dir, 1_100_000)));
  });

  for (const [what, payload] of Object.entries(UNCANONICAL)) {
    it(`local mode: ${what}`, async () => {
      const events = await runLocal(refusedEventScript(dir, what.replace(/\W+/g, "-"), payload));
      assertFailedClosed(events);
      assert.match(
        (events.find((e) => e.eventType === "runner.diagnostic")!.payload as { message: string }).message,
        /no_canonical_json/,
      );
    });
  }

  describe("durable mode", () => {
    let authority: SecureAuthority;
    before(async () => {
      authority = await SecureAuthority.start();
    });
    after(() => authority.close());

    it("an event larger than the outbox's soft limit", async () => {
      const identity = await authority.newRun();
      const { runner, log } = await durableRunner(authority, identity, {
        maxOutboxBytes: 16_384,
        p0ReserveBytes: 4_096,
        driver: new FakeHarnessDriver({ scriptPath: hugeEventScript(dir, 13_000), delayMs: 0 }),
      });
      assert.deepEqual(await runner.run(), { code: 0, reason: "run_delivered" }, log.join("\n"));
      assertFailedClosed(authority.committed.get(identity.runId) ?? []);
    });

    it("an event the authority refuses, which resending cannot cure (an outbox committed by an older build): one connection, then exit 5 refused_by_authority", async () => {
      const identity = await authority.newRun();
      const stateDir = join(authority.root, "runners", identity.runId);
      // What a runner before the shared admission rule committed: a lone surrogate, escaped by JSON.stringify.
      const state = RunnerState.open(stateDir, {
        ...identity,
        maxOutboxBytes: DEFAULT_MAX_OUTBOX_BYTES,
        p0ReserveBytes: DEFAULT_P0_RESERVE_BYTES,
      });
      const committed = state.admit(1, "item.completed", (seq) =>
        JSON.stringify(
          prpEvent(identity, seq, {
            eventType: "item.completed",
            priority: 1,
            payload: { kind: "agent_message", text: "split emoji \ud83d" },
          }),
        ),
      );
      assert.ok(committed.ok);
      state.close();
      const log: string[] = [];
      // No command is queued: the harness is never started, so nothing outlives the runner.
      const runner = new DurableRunner({
        identity,
        connectUrl: authority.url(identity.runId),
        stateDir,
        bootstrapToken: await authority.ticket(identity.runId),
        runnerVersion: BUILD.version,
        runnerDigest: BUILD.digest,
        reconnectDelayMs: 10,
        driver: new FakeHarnessDriver({ scriptPath: resolveScriptPath("happy-path"), delayMs: 0 }),
        log: (text) => log.push(text),
      });
      const outcome = await within(runner.run(), 30_000, "the runner stops instead of redialling");
      assert.equal(outcome.code, 5, log.join("\n"));
      assert.equal(outcome.reason, "refused_by_authority");
      assert.match("detail" in outcome ? outcome.detail : "", /^invalid_event: /);
      const run = await authority.snapshot(identity.runId);
      assert.equal(run.connectionCount, 1, "the authority accepted one connection: no redial storm");
      assert.equal(run.ackedSourceSeq, 0, "nothing was committed");
      assert.equal(
        (await authority.diagnostics(identity.runId)).filter((d) => d.code === "invalid_event").length,
        1,
        "refused once, with its reason recorded",
      );
    });

    for (const [what, payload] of Object.entries(UNCANONICAL)) {
      it(`${what}: refused before it is committed, so the authority accepts everything and sees one connection (no redial storm)`, async () => {
        const identity = await authority.newRun();
        const { runner, log } = await durableRunner(authority, identity, {
          driver: new FakeHarnessDriver({
            scriptPath: refusedEventScript(dir, what.replace(/\W+/g, "-"), payload),
            delayMs: 0,
          }),
        });
        const outcome = await within(runner.run(), 30_000, `the runner ends (log: ${log.join(" | ")})`);
        assert.deepEqual(outcome, { code: 0, reason: "run_delivered" }, log.join("\n"));
        assertFailedClosed(authority.committed.get(identity.runId) ?? []);
        const run = await authority.snapshot(identity.runId);
        assert.equal(run.connectionCount, 1, "one connection: nothing was refused and redialled");
        assert.equal(run.malformedFrames, 0, "the authority refused no frame");
      });
    }
  });
});
