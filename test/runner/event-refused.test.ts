import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { PrpEvent } from "../../src/contract/kinds.js";
import { FakeHarnessDriver } from "../../src/harness/fake-driver.js";
import { LocalRunnerClient } from "../../src/runner/local-client.js";
import { AT, result } from "../contract/samples.js";
import { durableRunner, SecureAuthority } from "../security/support.js";

/** A script whose one event is `bytes` long: more than the runner can ever carry. */
function hugeEventScript(dir: string, bytes: number): string {
  const path = join(dir, `huge-${bytes}.json`);
  writeFileSync(path, JSON.stringify({
    schema: "paperclip.fake_harness.script.v1", name: "huge-event",
    steps: [
      { kind: "event", event_type: "item.started", item_id: "item_small", payload: { kind: "agent_message" } },
      { kind: "event", event_type: "item.completed", item_id: "item_huge", payload: { kind: "agent_message", text: "x".repeat(bytes) } },
      { kind: "result", payload: result() },
      { kind: "exit", code: 0 },
    ],
  }));
  return path;
}

function assertFailedClosed(events: PrpEvent[]): void {
  const types = events.map((e) => e.eventType);
  assert.ok(types.includes("item.started"), "what came before the refused event is delivered");
  assert.ok(!events.some((e) => e.eventType === "item.completed"), "the refused event is not carried");
  const diagnostic = events.find((e) => e.eventType === "runner.diagnostic" && (e.payload as { code?: string }).code === "event_refused");
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

  it("local mode: an event over the 1 MiB frame limit", async () => {
    const events: PrpEvent[] = [];
    const client = new LocalRunnerClient({
      runId: "run_refused", sessionId: "session_refused", runnerId: "runner_refused", scriptPath: hugeEventScript(dir, 1_100_000), delayMs: 0,
      extraArgs: ["--harness-max-line-bytes", "2000000"],
      onEvent: (e) => { events.push(e); if (e.eventType === "run.terminal") client.close(); },
      onReceipt: () => {},
      onBadLine: (l) => assert.fail(`bad stream line ${l.slice(0, 200)}`),
    });
    ["run.prepare", "session.open", "turn.start"].forEach((type, i) =>
      client.sendRaw(JSON.stringify({ schema: "paperclip.prp.command.v1", commandId: `c${i + 1}`, controllerSeq: i + 1, type, issuedAt: AT, payload: {} })));
    await client.exited();
    assertFailedClosed(events);
  });

  describe("durable mode", () => {
    let authority: SecureAuthority;
    before(async () => {
      authority = await SecureAuthority.start();
    });
    after(() => authority.close());

    it("an event larger than the outbox's soft limit", async () => {
      const identity = await authority.newRun();
      const { runner, log } = await durableRunner(authority, identity, {
        maxOutboxBytes: 16_384, p0ReserveBytes: 4_096, driver: new FakeHarnessDriver({ scriptPath: hugeEventScript(dir, 13_000), delayMs: 0 }),
      });
      assert.deepEqual(await runner.run(), { code: 0, reason: "run_delivered" }, log.join("\n"));
      assertFailedClosed(authority.committed.get(identity.runId) ?? []);
    });
  });
});
