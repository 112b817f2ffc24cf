import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { packageRoot } from "../../src/contract/package-root.js";
import { until } from "../support/until.js";

/**
 * The controller's V8 heap for old objects, in MB: far less than the run's events. Its modules
 * alone keep about 23 MB live; under a 32 MB cap V8 now and then gave up on a run that kept
 * nothing (23 MB live after its last full collection, most likely no room left to promote the
 * young generation's survivors). The events are more than 1.5 times the cap.
 */
const HEAP_CAP_MB = 48;
const CHUNKS = 20_000;
const CHUNK_TEXT = 4_000;

/**
 * `prp run` keeps nothing proportional to the run: each event goes to the bundle's files as it
 * arrives. Judged by the controller's own heap limit: it runs with an old-space cap of 48 MB
 * while its runner streams 20,000 events of about 4 KB each (over 80 MB), and must finish with
 * a whole bundle. A reader that keeps every event is shown dying under the same cap.
 */
describe("prp run's memory does not grow with the run", () => {
  let dir: string;
  let scenario: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "prp-run-memory-"));
    scenario = join(dir, "long.json");
    writeFileSync(
      scenario,
      JSON.stringify({
        schema: "prp_kit.acp_test_agent.scenario.v1",
        name: "long",
        description: "a long answer",
        steps: [{ kind: "chunks", count: CHUNKS, text: "y".repeat(CHUNK_TEXT) }],
      }),
    );
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it(`streams ${CHUNKS} events of ${CHUNK_TEXT} bytes to a whole bundle under a ${HEAP_CAP_MB} MB heap`, async (t) => {
    const eventsFile = join(dir, "events.ndjson");
    const out = openSync(eventsFile, "w");
    const agent = `${process.execPath} ${join(packageRoot(), "dist/src/harness/acp/test-agent-process.js")} --scenario ${scenario}`;
    const child = spawn(
      process.execPath,
      [
        join(packageRoot(), "bin/prp.js"),
        "run",
        "--json",
        "--agent-command",
        agent,
        "--prompt",
        "x",
        "--run-id",
        "run_long",
        "--out",
        dir,
        "--agent-cwd",
        dir,
      ],
      {
        env: { ...process.env, NODE_OPTIONS: `--max-old-space-size=${HEAP_CAP_MB}` },
        stdio: ["ignore", out, "pipe"],
      },
    );
    closeSync(out);
    let stderr = "";
    child.stderr!.on(
      "data",
      (chunk: Buffer) => (stderr += chunk.toString()).length > 100_000 && (stderr = stderr.slice(-50_000)),
    );
    let exit: number | null | undefined;
    child.on("exit", (code) => (exit = code));
    // The resident high-water mark, sampled from /proc while it runs: reported, for a person to compare.
    let hwmKb = 0;
    const sample = setInterval(() => {
      try {
        hwmKb = Math.max(
          hwmKb,
          Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))?.[1] ?? 0),
        );
      } catch {
        // gone between two samples
      }
    }, 20);
    try {
      await until(() => exit !== undefined, "prp run to end", 240_000);
    } finally {
      clearInterval(sample);
      if (exit === undefined) child.kill("SIGKILL");
    }
    const streamed = statSync(eventsFile).size;
    t.diagnostic(
      `events streamed: ${streamed} bytes; controller VmHWM ${hwmKb} kB under --max-old-space-size=${HEAP_CAP_MB}`,
    );
    assert.equal(exit, 0, stderr.slice(-2_000));
    assert.ok(
      streamed > 1.5 * HEAP_CAP_MB * 1024 * 1024,
      `the run's events (${streamed} bytes) are more than the heap could hold`,
    );
    const bundle = JSON.parse(readFileSync(join(dir, "runs", "run_long", "native-execution.json"), "utf8"));
    assert.ok(bundle.events.length > CHUNKS, `the bundle has every event (${bundle.events.length})`);
    assert.equal(bundle.transcript.eventCount, bundle.events.length);
    const validate = spawnSync(
      process.execPath,
      [
        join(packageRoot(), "bin/prp.js"),
        "validate",
        "--verify-files",
        "--max-bytes",
        String(256 * 1024 * 1024),
        join(dir, "runs", "run_long", "native-execution.json"),
      ],
      { encoding: "utf8", timeout: 120_000 },
    );
    assert.equal(validate.status, 0, validate.stdout + validate.stderr);

    // The bound is one that keeping every event breaks: a reader that does dies under the same cap.
    const holder = spawnSync(
      process.execPath,
      [
        `--max-old-space-size=${HEAP_CAP_MB}`,
        "-e",
        "const kept = []; for (const l of require('fs').readFileSync(process.argv[1], 'latin1').split('\\n')) if (l) kept.push(JSON.parse(l)); console.log(kept.length)",
        eventsFile,
      ],
      { encoding: "utf8", timeout: 120_000 },
    );
    assert.notEqual(
      holder.status,
      0,
      `a reader that keeps every event must not fit in ${HEAP_CAP_MB} MB (it printed ${holder.stdout.trim()})`,
    );
  });
});
