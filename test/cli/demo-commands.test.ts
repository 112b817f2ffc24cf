import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { PATIENT_HARNESS } from "../support/scripts.js";
import { until } from "../support/until.js";
import { killAll, spawnPrp, type Child } from "./authority-processes.js";
import { answerWhenAsked, eventLines, judgeRun } from "./authority-run.js";
import { adminJson, runPrp } from "./run-cli.js";

describe("prp demo delivers the commands other processes queue in its store", () => {
  const dir = mkdtempSync(join(tmpdir(), "prp-demo-commands-"));
  const children: Child[] = [];
  after(async () => {
    await killAll(children);
    rmSync(dir, { recursive: true, force: true });
  });

  /** `prp demo --console` playing `script`, once its run is registered; its store flags, as another process opens it. */
  async function startDemo(script: string, out: string) {
    const demo = spawnPrp([
      "demo",
      "--console",
      "--script",
      script,
      "--delay-ms",
      "0",
      "--out",
      out,
      ...PATIENT_HARNESS,
    ]);
    children.push(demo);
    await until(
      () => /#\/run\/run_\w+/.test(demo.stdout()),
      () => `the demo to register its run; stdout: ${demo.stdout()} stderr: ${demo.stderr()}`,
      60_000,
    );
    const runId = /#\/run\/(run_\w+)/.exec(demo.stdout())![1]!;
    const stackDir = join(out, "demo", "console");
    // The demo's local control plane's store, opened by another process, as prp authority command does.
    const store = [
      "--store",
      `sqlite:${join(stackDir, "authority")}`,
      "--server-key-file",
      join(stackDir, "authority-server-key"),
    ];
    const committed = () => eventLines(runPrp(["events", "--run", runId, "--json", ...store]).stdout);
    return { demo, runId, store, committed };
  }

  it("answers queued beside prp demo --console (as its console queues them) reach the harness, and the run ends", async () => {
    const { demo, runId, store, committed } = await startDemo("permission-input", join(dir, "answers"));
    const send = (payload: Record<string, unknown>) =>
      assert.equal(
        adminJson(store, [
          "authority",
          "command",
          runId,
          "request.resolve",
          "--json",
          "--payload",
          JSON.stringify(payload),
        ]).created,
        true,
      );
    await answerWhenAsked(
      committed,
      send,
      runId.replace(/^run_/, "turn_"),
      () => `demo: ${demo.stdout()} ${demo.stderr()}`,
    );

    await until(
      () => demo.stdout().includes("open until Ctrl-C"),
      () => `the run to end once answered; runs: ${runPrp(["authority", "runs", "--json", ...store]).stdout}`,
      60_000,
    );
    const events = committed();
    assert.deepEqual(judgeRun(events), { runTerminalState: "succeeded", problems: [] });
    assert.equal(
      events.filter((e) => e.eventType === "runtime_request.resolved").length,
      2,
      "both answers reached the harness",
    );
    assert.equal((adminJson(store, ["authority", "runs", "--json"]) as { pendingCommands: number }).pendingCommands, 0);
    demo.kill("SIGINT");
    assert.equal(await demo.exited(), 0, demo.stderr());
  });

  it("a run.cancel queued beside it ends the run waiting for an answer, cancelled", async () => {
    const { demo, runId, store, committed } = await startDemo("interactive-question", join(dir, "cancel"));
    await until(
      () => committed().some((e) => e.eventType === "runtime_request.created"),
      () => `the question to be asked; demo: ${demo.stdout()}`,
      60_000,
    );
    assert.equal(adminJson(store, ["authority", "command", runId, "run.cancel", "--json"]).created, true);
    await until(
      () => demo.stdout().includes("open until Ctrl-C"),
      () => `the cancel to end the run; runs: ${runPrp(["authority", "runs", "--json", ...store]).stdout}`,
      60_000,
    );
    assert.deepEqual(judgeRun(committed()), { runTerminalState: "cancelled", problems: [] });
    demo.kill("SIGINT");
    assert.equal(await demo.exited(), 1, "a cancelled demo run exits 1");
  });
});
