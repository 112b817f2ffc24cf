import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { DurableRunFacts } from "../../src/fault/durable-run.js";
import { runFaultOnce } from "../../src/fault/fault-run.js";
import { FAULTS } from "../../src/fault/faults.js";
import type { PrpEvent } from "../../src/contract/kinds.js";
import type { LoadedScript } from "../../src/harness/script-file.js";
import { loadedScript, PATIENT_HARNESS } from "../support/scripts.js";

/** Evidence, from the authority's own counters, that the fault really acted on the run. */
const ACTED: Record<string, (facts: DurableRunFacts) => boolean> = {
  none: () => true,
  "socket-drop": (f) => (f.run?.connectionCount ?? 0) >= 2,
  "lost-ack": (f) => (f.run?.connectionCount ?? 0) >= 2,
  "storage-pressure": (f) => f.events.some((e) => e.eventType === "runner.backpressure"),
  "harness-restart": (f) => f.events.filter((e) => e.eventType === "harness.ready").length === 2,
  "duplicate-command": (f) => Object.values(f.run?.commandDeliveryCounts ?? {}).some((n) => n > 1),
};

/** How often the host received each item event, keyed `eventType itemId`. */
function itemEventCounts(events: PrpEvent[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const e of events) {
    if (!e.eventType.startsWith("item.")) continue;
    const key = `${e.eventType} ${(e as { providerItemId?: string }).providerItemId}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

// Three runs at a time: a run mostly waits on fsync (each event is committed on both sides).
describe(
  "300 items (600 item events) under each fault: every item event reaches the host once and the run succeeds",
  { concurrency: 3 },
  () => {
    const SEED = 300; // these faults make no random choice; the seed is recorded all the same
    let out: string;
    let script: LoadedScript;
    before(() => {
      out = mkdtempSync(join(tmpdir(), "prp-faults-300-"));
      script = loadedScript("many-items");
    });
    after(() => rmSync(out, { recursive: true, force: true }));

    for (const name of Object.keys(ACTED)) {
      it(`${name}`, { timeout: 180_000 }, async (t) => {
        t.diagnostic(`seed ${SEED}`);
        const started = Date.now();
        const { facts, verdict } = await runFaultOnce({
          fault: FAULTS[name]!,
          script,
          seed: SEED,
          dir: join(out, name),
          delayMs: 0,
          runnerArgs: PATIENT_HARNESS,
        });
        t.diagnostic(`${name}: ${facts.events.length} events in ${Date.now() - started} ms`);
        assert.ok(ACTED[name]!(facts), `the ${name} fault acted on the run`);
        assert.equal(verdict.passed, true, JSON.stringify(verdict.checks.filter((c) => !c.passed)));
        assert.deepEqual(verdict.scriptEvents, { expected: 605, delivered: 605 });
        const counts = itemEventCounts(facts.events);
        assert.equal(counts.size, 600, "600 distinct item events reached the host");
        assert.deepEqual(
          [...counts.values()].filter((n) => n !== 1),
          [],
          "each exactly once",
        );
        const terminal = facts.events.at(-1)!;
        assert.equal(terminal.eventType, "run.terminal");
        assert.equal((terminal.payload as { runTerminalState?: string }).runTerminalState, "succeeded");
      });
    }
  },
);
