import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { FakeHarness, type Step } from "../../src/harness/fake-harness.js";
import { COMMAND_SCHEMA, type HarnessCommand, type HarnessMessage } from "../../src/harness/harness-protocol.js";
import { scriptEmissions } from "../../src/harness/script-emissions.js";
import { loadScript, scenariosDir } from "../../src/harness/script-file.js";

/** Plays a script in this process, answering every request and interrupt; returns what a runner would report. */
async function play(
  harness: (io: ConstructorParameters<typeof FakeHarness>[1]) => FakeHarness,
): Promise<Array<{ eventType: string; itemId?: string; payload: Record<string, unknown> }>> {
  const reported: Array<{ eventType: string; itemId?: string; payload: Record<string, unknown> }> = [];
  let seq = 0;
  let resultSeen = false;
  const command = (type: HarnessCommand["type"], payload: Record<string, unknown>) =>
    ({ schema: COMMAND_SCHEMA, commandSeq: ++seq, type, payload }) as unknown as HarnessCommand;
  const h: FakeHarness = harness({
    writeStdout: (line) => {
      const m = JSON.parse(line) as HarnessMessage;
      if (m.type === "event") {
        const e = m.payload as HarnessMessage<"event">["payload"];
        reported.push({ eventType: e.eventType, ...(e.itemId ? { itemId: e.itemId } : {}), payload: e.payload });
        if (e.eventType === "runtime_request.created") {
          const requestId = (e.payload.request as { requestId: string }).requestId;
          queueMicrotask(() => h.receive(command("request.resolve", { requestId, resolution: { action: "submit" } })));
        }
        if (e.eventType === "runtime.phase.changed" && e.payload.phase === "awaiting_interrupt")
          queueMicrotask(() => h.receive(command("turn.interrupt", { reason: "operator" })));
      } else if (m.type === "result" && !resultSeen) {
        resultSeen = true; // the runner reports the first result and diagnoses any later one
        reported.push({
          eventType: "run.result.proposed",
          payload: (m.payload as HarnessMessage<"result">["payload"]).payload,
        });
      }
    },
    writeStderr: () => {},
    exit: () => {},
  });
  h.receive(command("session.open", { normalizedSessionId: "session_1", driverSessionId: "driver_1" }));
  h.receive(command("turn.start", { turnId: "turn_1" }));
  await h.run();
  return reported;
}

describe("scriptEmissions: the judge's oracle agrees with the fake harness", () => {
  const scenarios = readdirSync(scenariosDir())
    .filter((f) => f.endsWith(".json"))
    .sort();
  it("there are scenarios to compare", () => assert.ok(scenarios.length >= 9, scenarios.join(", ")));

  for (const file of scenarios) {
    const loaded = loadScript(join(scenariosDir(), file));
    assert.ok(loaded.ok, file);
    const script = loaded.value.script;
    // A spawn_worker step starts a real 60 s worker this in-process player could not stop, and
    // reports nothing: the harness plays the script without it, the walk sees the whole script.
    const played = {
      ...script,
      steps: (script.steps as Step[]).filter((s) => s.kind !== "spawn_worker"),
    } as typeof script;
    it(`${script.name}: the walk lists exactly what the harness reports, in order`, async () => {
      const reported = await play(
        (io) => new FakeHarness(played, io, { delayMs: 0, commandWaitMs: 1_000, resolutionWaitMs: 1_000 }),
      );
      const expected = scriptEmissions(script);
      assert.ok(expected.length > 3, "more than the opening events");
      const withoutCommandFields = reported.map((r, i) => {
        const drop = expected[i]?.fromCommand ?? [];
        return { ...r, payload: Object.fromEntries(Object.entries(r.payload).filter(([k]) => !drop.includes(k))) };
      });
      assert.deepEqual(
        withoutCommandFields,
        expected.map(({ fromCommand: _, ...e }) => e),
      );
    });
  }
});
