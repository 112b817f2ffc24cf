import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { PrpEvent } from "../../src/contract/kinds.js";
import { LocalRunnerClient } from "../../src/runner/local-client.js";
import { AT, result } from "../contract/samples.js";
import { withPatientHarness } from "../support/scripts.js";

/** Runs a script through prp-runnerd and returns every event once the runner has exited. */
async function runScript(scriptPath: string, extraArgs: string[] = []): Promise<PrpEvent[]> {
  const events: PrpEvent[] = [];
  const client = new LocalRunnerClient({
    runId: "run_fault",
    sessionId: "session_fault",
    runnerId: "runner_fault",
    scriptPath,
    delayMs: 0,
    extraArgs: withPatientHarness(extraArgs, "prp-runnerd"),
    onEvent: (e) => {
      events.push(e);
      if (e.eventType === "run.terminal") client.close();
    },
    onReceipt: () => {},
    onBadLine: (l) => assert.fail(`bad stream line ${l}`),
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
  assert.ok(
    events.some((e) => e.eventType === "run.terminal"),
    `the runner (exit ${JSON.stringify(exit)}) ended without run.terminal:\n${client.stderrTail().join("\n")}`,
  );
  return events;
}

const terminalOf = (events: PrpEvent[]) => events.find((e) => e.eventType === "run.terminal")!.payload as any;
const diagnostics = (events: PrpEvent[]) =>
  events.filter((e) => e.eventType === "harness.diagnostic").map((e) => e.payload as any);

describe("what the runner does with a misbehaving harness", () => {
  let dir: string;
  const script = (name: string, steps: unknown[]) => {
    const path = join(dir, `${name}.json`);
    writeFileSync(path, JSON.stringify({ schema: "paperclip.fake_harness.script.v1", name, steps }));
    return path;
  };
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "prp-faults-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("keeps the first result and diagnoses a second one", async () => {
    const events = await runScript(
      script("two-results", [
        { kind: "result", payload: result({ summary: "first" }) },
        { kind: "result", payload: result({ summary: "second" }) },
        { kind: "exit", code: 0 },
      ]),
    );
    assert.deepEqual(
      events.filter((e) => e.eventType === "run.result.proposed").map((e) => (e.payload as any).summary),
      ["first"],
    );
    assert.deepEqual(
      diagnostics(events).map((d) => d.code),
      ["duplicate_semantic_result_ignored"],
    );
    assert.equal(terminalOf(events).runTerminalState, "succeeded");
  });

  it("does not believe a harness that reports a runner-owned event", async () => {
    const events = await runScript(
      script("forged-terminal", [
        {
          kind: "event",
          event_type: "run.terminal",
          payload: {
            schema: "paperclip.prp.terminal.v1",
            turnTerminalState: "completed",
            runTerminalState: "succeeded",
            reportedWorkDisposition: "done",
          },
        },
        { kind: "result", payload: result() },
        { kind: "exit", code: 0 },
      ]),
    );
    assert.equal(events.filter((e) => e.eventType === "run.terminal").length, 1);
    assert.match(diagnostics(events)[0].message, /may not report run\.terminal/);
    assert.equal(terminalOf(events).reconciliation.reason, "harness_protocol_violation");
  });

  it("fails the run when the harness sends an event its contract refuses", async () => {
    const events = await runScript(
      script("bad-payload", [
        {
          kind: "event",
          event_type: "auth.credentials.updated",
          payload: {
            schema: "paperclip.auth.credentials.updated.v1",
            provider: "codex",
            bindingId: "harness-auth",
            revision: 1,
            detection: "credential_store",
            token: "secret",
          },
        },
        { kind: "exit", code: 0 },
      ]),
    );
    assert.ok(!events.some((e) => e.eventType === "auth.credentials.updated"), "the invalid event is never emitted");
    assert.match(
      diagnostics(events)[0].message,
      /breaks the contract: \/payload: .*must not have the property "token"/,
    );
    assert.equal(terminalOf(events).runTerminalState, "failed");
  });

  it("fails the run when the harness exits without saying ready", async () => {
    const events = await runScript(script("unused", [{ kind: "exit", code: 0 }]), ["--fake-harness", "/bin/false"]);
    assert.ok(!events.some((e) => e.eventType === "harness.ready"));
    assert.equal(terminalOf(events).reconciliation.reason, "harness_protocol_violation");
    assert.match(diagnostics(events)[0].message, /did not say ready/);
  });

  it("gives a silent harness --harness-ready-ms to say ready, then fails the run", async () => {
    const silent = join(dir, "silent-harness.sh");
    writeFileSync(silent, "#!/bin/sh\nexec sleep 30\n", { mode: 0o700 });
    const events = await runScript(script("unused", [{ kind: "exit", code: 0 }]), [
      "--fake-harness",
      silent,
      "--harness-ready-ms",
      "300",
    ]);
    assert.match(diagnostics(events)[0].message, /did not say ready within 300 ms/);
    assert.equal(terminalOf(events).reconciliation.reason, "harness_protocol_violation");
  });

  it("fails the run, naming the depth limit, when the harness writes a JSON line nested 32,000 deep", async () => {
    // Under the 64 KiB line limit; JSON.parse reads it, a recursive walk after it would overflow the stack.
    const deep = join(dir, "deep-harness.sh");
    writeFileSync(
      deep,
      `#!/bin/sh\n${process.execPath} -e 'process.stdout.write("[".repeat(32000) + "]".repeat(32000) + "\\n")'\nexec sleep 30\n`,
      { mode: 0o700 },
    );
    const events = await runScript(script("unused", [{ kind: "exit", code: 0 }]), ["--fake-harness", deep]);
    assert.equal(terminalOf(events).reconciliation.reason, "harness_protocol_violation");
    assert.match(diagnostics(events)[0].message, /JSON nests deeper than 64 levels/);
  });

  it("gives events deterministic ids, timestamps and priorities", async () => {
    const path = script("ids", [
      { kind: "event", event_type: "item.delta", item_id: "i1", payload: { text: "x" } },
      { kind: "result", payload: result() },
      { kind: "exit", code: 0 },
    ]);
    const first = await runScript(path);
    const second = await runScript(path);
    const strip = (events: PrpEvent[]) =>
      events.map((e) => ({
        ...e,
        payload:
          e.eventType === "harness.ready" || e.eventType === "harness.exited" || e.eventType === "harness.starting"
            ? null
            : e.payload,
      }));
    assert.deepEqual(
      strip(first).filter((e) => e.eventType !== "run.terminal"),
      strip(second).filter((e) => e.eventType !== "run.terminal"),
    );
    assert.equal(first[0]!.sourceEventId, "event_run_fault_001");
    assert.equal(first[0]!.emittedAt, "2026-08-07T21:00:00.001Z");
    const priority = (type: string) => first.find((e) => e.eventType === type)!.priority;
    assert.deepEqual(
      [
        priority("item.delta"),
        priority("turn.started"),
        priority("run.result.proposed"),
        priority("harness.exited"),
        priority("run.terminal"),
      ],
      [2, 1, 0, 0, 0],
    );
  });
});
