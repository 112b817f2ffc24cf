import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { packageRoot } from "../../src/contract/package-root.js";
import { liveProcesses } from "../../src/harness/live-processes.js";
import { argvOf } from "../support/processes.js";
import { PATIENT_HARNESS } from "../support/scripts.js";
import { until } from "../support/until.js";
import type { Forgery } from "../support/forging-runnerd.js";

/**
 * Issue 23: a hostile agent wrote its own event lines into the runner's stdout, and `prp run`
 * printed `completed / succeeded (done)`, exited 0 and wrote a bundle with two terminals. Here
 * the runner's stream is forged the same ways (test/support/forging-runnerd.ts stands in for
 * prp-runnerd through the PRP_TEST_RUNNERD seam and mixes its lines into the real runner's);
 * the controller must refuse the record: exit 3, say why, print no outcome, write no bundle.
 */
describe("prp run refuses a runner stream that is not one run's record", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "prp-forged-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const run = async (forgery: Forgery, script: string) => {
    const entry = join(dir, `forge-${forgery}.mjs`);
    writeFileSync(entry, `import { forgeRunnerStream } from ${JSON.stringify(join(packageRoot(), "dist/test/support/forging-runnerd.js"))};\nforgeRunnerStream(${JSON.stringify(forgery)});\n`);
    const runId = `run_forged_${forgery.replace(/-/g, "_")}`;
    const res = spawnSync(process.execPath, [join(packageRoot(), "bin/prp.js"), "run", "--script", script, "--delay-ms", "0", "--run-id", runId, "--out", dir, ...PATIENT_HARNESS], {
      env: { ...process.env, PRP_TEST_RUNNERD: entry }, encoding: "utf8", timeout: 60_000,
    });
    // The controller ends its runner's group; nothing that names the run may outlive it.
    const left = () => liveProcesses().filter((p) => argvOf(p.pid).includes(runId));
    await until(() => left().length === 0, () => `the run's processes to end: ${left().map((p) => argvOf(p.pid).join(" ")).join("; ")}`);
    const runDir = join(dir, "runs", runId);
    return { ...res, files: existsSync(runDir) ? readdirSync(runDir, { recursive: true }).map(String) : [] };
  };

  it("passes the runner's own stream: the seam alone changes nothing", async () => {
    const res = await run("none", "happy-path");
    assert.equal(res.status, 0, res.stderr);
    assert.match(res.stdout, /: completed \/ succeeded \(done\)/);
    assert.ok(res.files.includes("native-execution.json"), res.files.join(", "));
  });

  const forged: Array<[Forgery, string, RegExp]> = [
    ["terminal-first", "error", /event_after_terminal at \/events\/2: /],
    ["repeat-id", "happy-path", /sequence_repeat at \/events\/3\/sourceSeq: /],
    ["second-terminal", "happy-path", /second_terminal at \/events\/\d+: /],
    ["terminal-then-kill", "error", /unconfirmed_end at \/events\/2: the runner ended by SIGKILL/],
  ];
  for (const [forgery, script, problem] of forged) {
    it(`${forgery}: exit 3, the problem named, no outcome shown, no bundle`, async () => {
      const res = await run(forgery, script);
      assert.equal(res.status, 3, `${res.stdout}\n${res.stderr}`);
      assert.match(res.stderr, /prp run: the runner's output was not a valid record of run run_forged_\w+: /);
      assert.match(res.stderr, problem);
      assert.doesNotMatch(res.stdout, /^run run_forged_\w+: /m, "no outcome line");
      assert.deepEqual(res.files.filter((f) => /native-execution|transcript|partial|semantic/.test(f)), [], "no bundle, whole or partial");
    });
  }
});
