import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import type { WorkerClaim } from "../../src/client/index.js";
import type { ExitFact } from "../../src/harness/supervisor.js";
import type { RunnerHandle, SpawnRunnerOptions } from "../../src/runner/spawn.js";
import { claimStarter } from "../../src/worker/start-claim.js";
import { RECORD_FILE, WorkerRecord } from "../../src/worker/worker-record.js";

const claim = (runId: string, connectUrl: string, agent: WorkerClaim["spec"]["agent"]): WorkerClaim => ({
  runId,
  attempt: 3,
  ticket: "prp_ticket_SECRET_do_not_write",
  expiresAt: new Date().toISOString(),
  connectUrl,
  protocolMax: 2,
  identity: {
    runId,
    normalizedSessionId: "session_1",
    runnerInstanceId: "runner_1",
    environmentLeaseId: "env_1",
    turnId: "turn_1",
    itemId: "item_1",
  },
  harnessArgs:
    agent.kind === "fake"
      ? ["--script", "happy-path"]
      : agent.kind === "profile"
        ? ["--agent", agent.profile]
        : ["--harness", "acp", "--agent-command", "x"],
  spec: { agent },
});

describe("starting a claim", () => {
  it("a starting line is on disk before the spawn; the ticket goes by stdin only and is in no file; state 0700; a workspace for an agent; the CA only for wss://", async () => {
    const dir = mkdtempSync(join(tmpdir(), "prp-start-claim-"));
    try {
      const spawned: SpawnRunnerOptions[] = [];
      let exit!: (fact: ExitFact) => void;
      const start = claimStarter({
        dir,
        record: new WorkerRecord(dir),
        caBundlePath: "/etc/ca.pem",
        agentsDir: "/opt/prp-agents",
        spawn: (options) => {
          const lines = readFileSync(join(dir, RECORD_FILE), "utf8").trim().split("\n");
          assert.equal(JSON.parse(lines.at(-1)!).kind, "starting", "recorded before the spawn");
          spawned.push(options);
          const exited = new Promise<ExitFact>((resolve) => (exit = resolve));
          return {
            pid: 777,
            exited,
            stderrTail: () => [],
            stop: () => exited,
            process: undefined as unknown as RunnerHandle["process"],
          };
        },
      });
      const runner = await start(
        claim("run_a", "wss://authority:7400/v1/runners/run_a", { kind: "profile", profile: "p" }),
      );
      exit({ exitCode: 0, signal: null, success: true });
      assert.deepEqual(await runner.exited, { exitCode: 0, signal: null, stderrTail: [] });
      await start(claim("run_b", "ws://127.0.0.1:1/v1/runners/run_b", { kind: "fake", script: "happy-path" }));

      const [a, b] = spawned;
      assert.equal(a!.ticketVia, "stdin");
      assert.equal(a!.ticket, "prp_ticket_SECRET_do_not_write");
      assert.equal(a!.env, undefined, "nothing in the environment");
      assert.equal(a!.stateDir, join(dir, "state", "run_a"));
      assert.equal(statSync(a!.stateDir).mode & 0o777, 0o700);
      assert.deepEqual(
        a!.harnessArgs,
        ["--agent", "p", "--agent-cwd", join(dir, "workspaces", "run_a"), "--agents-dir", "/opt/prp-agents"],
        "a named agent is found where this worker's agents are installed",
      );
      const hidden = ["--sandbox-hide", join(dir, "state"), "--sandbox-hide", join(dir, RECORD_FILE)];
      assert.deepEqual(
        a!.extraArgs,
        ["--ca-bundle-path", "/etc/ca.pem", ...hidden],
        "every run's state and the record hidden",
      );
      assert.equal(a!.protocolMax, 2);
      assert.equal(b!.harnessArgs!.includes("--agent-cwd"), false, "a fake run has no workspace");
      assert.equal(b!.harnessArgs!.includes("--agents-dir"), false, "nor an agents folder");
      assert.deepEqual(b!.extraArgs, hidden, "prp-runnerd refuses --ca-bundle-path with ws://");

      const text = readFileSync(join(dir, RECORD_FILE), "utf8");
      assert.equal(text.includes("SECRET"), false, "the ticket is never written");
      assert.equal(statSync(join(dir, RECORD_FILE)).mode & 0o777, 0o600);
      const lines = text
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
      assert.deepEqual(
        lines.map((l) => [l.kind, l.runId, l.pid ?? l.exitCode ?? null]),
        [
          ["starting", "run_a", null],
          ["started", "run_a", 777],
          ["exited", "run_a", 0],
          ["starting", "run_b", null],
          ["started", "run_b", 777],
        ],
      );
      assert.equal(lines[1].attempt, 3);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
