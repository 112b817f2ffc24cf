import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { runDurable } from "../../src/fault/durable-run.js";
import { judgeFault } from "../../src/fault/fault-judge.js";
import { FAULTS } from "../../src/fault/faults.js";
import { describeKillPoint, drawKillPoint, KILL_KINDS, killPlan } from "../../src/fault/kill-points.js";
import { drawSeed, seededRandom } from "../../src/fault/seeded-random.js";
import type { LoadedScript } from "../../src/harness/script-file.js";
import { loadedScript, PATIENT_HARNESS } from "../support/scripts.js";

/** How many runs, each SIGKILLed once: PRP_SOAK_KILLS (at least 100 in CI). */
const KILLS = Number(process.env.PRP_SOAK_KILLS ?? 100);
/** Runs at a time: PRP_SOAK_CONCURRENCY. A run mostly waits on process start-up and fsync, so four keep two cores busy. */
const CONCURRENCY = Number(process.env.PRP_SOAK_CONCURRENCY ?? 4);
/** The whole soak's time bound: PRP_SOAK_TIMEOUT_MS. */
const TIMEOUT_MS = Number(process.env.PRP_SOAK_TIMEOUT_MS ?? 10 * 60 * 1000);
const SEED = process.env.PRP_SOAK_SEED !== undefined ? Number(process.env.PRP_SOAK_SEED) : drawSeed();

/**
 * Many short happy-path runs, each with one SIGKILL of its runner at a seeded point — after an
 * outbox commit, after a journal entry, or from outside after K committed events, in turn —
 * and a replacement on the same state. A killed runner's harness ends with its stdin, so a run
 * killed before its terminal ends with runner.reconciled and a failed terminal; the judge holds
 * every run to the prefix rule: the script's events that reached the host are its first ones,
 * once each, with no hole; sourceSeq contiguous; one terminal, and it is last.
 */
describe(`SIGKILL soak: ${KILLS} runs, one kill each, seed ${SEED} (PRP_SOAK_SEED=${SEED} repeats it)`, () => {
  let out: string;
  let script: LoadedScript;
  before(() => {
    out = mkdtempSync(join(tmpdir(), "prp-soak-"));
    script = loadedScript("happy-path");
  });
  after(() => rmSync(out, { recursive: true, force: true }));

  it("no run loses or repeats an event, and each ends with one terminal, last", { timeout: TIMEOUT_MS }, async (t) => {
    for (const [name, n] of [
      ["PRP_SOAK_KILLS", KILLS],
      ["PRP_SOAK_CONCURRENCY", CONCURRENCY],
      ["PRP_SOAK_SEED", SEED],
    ] as const) {
      assert.ok(Number.isSafeInteger(n) && n >= 0, `${name} must be a whole number, got ${n}`);
    }
    t.diagnostic(`seed ${SEED}`);
    // Every point is drawn before any run starts, so the seed fixes them whatever the scheduling.
    const random = seededRandom(SEED);
    const points = Array.from({ length: KILLS }, (_, i) => drawKillPoint(random, KILL_KINDS[i % KILL_KINDS.length]!));
    const failures: string[] = [];
    let killed = 0;
    const soakOne = async (i: number) => {
      const point = points[i]!;
      const plan = killPlan(point);
      const dir = join(out, String(i));
      const facts = await runDurable({
        script,
        dir,
        faults: plan.steps,
        ...(plan.crashAt ? { crashAt: plan.crashAt } : {}),
        delayMs: 0,
        runnerArgs: PATIENT_HARNESS,
      });
      const where = `run ${i} (seed ${SEED}), ${describeKillPoint(point)}`;
      // The kill point was reached: the first runner died by SIGKILL and a replacement ran.
      if (facts.runnerExits[0]?.signal !== "SIGKILL" || facts.runnerExits.length !== 2) {
        const diagnostics = facts.events
          .filter((e) => e.eventType === "harness.diagnostic")
          .map((e) => (e.payload as { message?: string }).message);
        return void failures.push(
          `${where}: the kill point was not reached; runner exits ${JSON.stringify(facts.runnerExits)}; the host got ${facts.events.map((e) => e.eventType).join(", ")}; ${JSON.stringify(diagnostics)}`,
        );
      }
      killed++;
      const verdict = judgeFault(FAULTS["runner-restart"]!, facts, script.script);
      if (!verdict.passed)
        failures.push(
          `${where}: ${verdict.checks
            .filter((c) => !c.passed)
            .map((c) => `${c.check}: ${c.reasons.join("; ")}`)
            .join(" | ")}`,
        );
      rmSync(dir, { recursive: true, force: true });
    };
    const started = Date.now();
    let next = 0;
    // Settled, not raced: a failing run never leaves another one's processes behind.
    const workers = await Promise.allSettled(
      Array.from({ length: Math.max(1, CONCURRENCY) }, async () => {
        while (next < KILLS) await soakOne(next++);
      }),
    );
    for (const w of workers)
      if (w.status === "rejected") failures.push(`a run threw: ${(w.reason as Error)?.stack ?? String(w.reason)}`);
    t.diagnostic(`${killed} SIGKILLs judged in ${Date.now() - started} ms, ${CONCURRENCY} at a time`);
    assert.deepEqual(failures, [], `${failures.length} of ${KILLS} killed runs failed`);
    assert.equal(killed, KILLS, "every run was killed at its point");
  });
});
