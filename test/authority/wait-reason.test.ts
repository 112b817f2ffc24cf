import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { WorkerRow } from "../../src/authority/store.js";
import { runStateOf } from "../../src/authority/run-state.js";
import { heldPairs, labelsMatch } from "../../src/authority/dispatch-rules.js";
import { waitReason, workerLive } from "../../src/authority/wait-reason.js";

const NOW = 1_000_000;
const worker = (overrides: Partial<WorkerRow> = {}): WorkerRow => ({
  workerId: "wkr_0000000000000001",
  name: "w1",
  digest: "sha256:x",
  createdAtUnixMs: 0,
  revokedAtUnixMs: null,
  labels: { os: "linux", agent: "claude" },
  agents: [],
  maxRuns: 2,
  draining: false,
  lastSeenAtUnixMs: NOW - 1_000,
  activeRuns: 0,
  ...overrides,
});
const facts = (workers: WorkerRow[], caps: Array<{ scope: string; max: number; active: number }> = []) => ({
  caps,
  workers,
  nowMs: NOW,
  graceMs: 30_000,
});

describe("why a queued run waits", () => {
  it("names a full cap first: every run's, then a label's", () => {
    const labels = { os: "linux", agent: "claude" };
    assert.equal(waitReason(labels, facts([worker()], [{ scope: "*", max: 3, active: 3 }])), "cap (all runs) 3/3");
    assert.equal(
      waitReason(labels, facts([worker()], [{ scope: "agent=claude", max: 4, active: 4 }])),
      "cap agent=claude 4/4",
    );
    assert.equal(
      waitReason(labels, facts([worker()], [{ scope: "agent=codex", max: 1, active: 1 }])),
      "waiting for a worker's next poll",
      "a cap on another label does not hold it",
    );
  });

  it("says when no worker could take it, and which label none holds", () => {
    assert.equal(waitReason({}, facts([])), "no worker registered");
    assert.equal(waitReason({}, facts([worker({ lastSeenAtUnixMs: NOW - 60_000 })])), "no live worker");
    assert.equal(waitReason({}, facts([worker({ draining: true })])), "no live worker");
    assert.equal(waitReason({}, facts([worker({ revokedAtUnixMs: NOW })])), "no live worker");
    assert.equal(waitReason({ os: "mac" }, facts([worker()])), "no worker with os=mac");
    const split = [worker({ labels: { os: "linux" } }), worker({ labels: { agent: "claude" } })];
    assert.equal(waitReason({ os: "linux", agent: "claude" }, facts(split)), "no worker with os=linux,agent=claude");
  });

  it("says when every worker that could take it is busy", () => {
    assert.equal(
      waitReason({ os: "linux" }, facts([worker({ activeRuns: 2 }), worker({ activeRuns: 1, maxRuns: 1 })])),
      "every matching worker is busy (2 workers, 3/3 runs)",
    );
  });

  it("matches a worker holding every label of the run, and more", () => {
    assert.equal(labelsMatch({ os: "linux" }, { labels: { os: "linux", gpu: "a100" } }), true);
    assert.equal(labelsMatch({ os: "linux", gpu: "a100" }, { labels: { os: "linux" } }), false);
    assert.equal(labelsMatch({ os: "linux" }, { labels: { os: "Linux" } }), false);
    assert.equal(workerLive(worker({ lastSeenAtUnixMs: null }), NOW, 30_000), false);
  });

  it("counts each advertised agent as the pair agent=<name>, beside the worker's labels", () => {
    const both = { labels: { os: "linux" }, agents: ["claude", "codex"] };
    assert.equal(labelsMatch({ agent: "claude" }, both), true);
    assert.equal(labelsMatch({ agent: "codex", os: "linux" }, both), true);
    assert.equal(labelsMatch({ agent: "gemini" }, both), false);
    // Only the agent key: an advertised name is not any other label's value.
    assert.equal(labelsMatch({ model: "claude" }, both), false);
    assert.deepEqual(heldPairs(both), ["os=linux", "agent=claude", "agent=codex"]);
  });

  it("says no worker with agent=claude when the live workers advertise other agents", () => {
    const codexOnly = worker({ labels: { os: "linux" }, agents: ["codex"] });
    assert.equal(waitReason({ agent: "claude" }, facts([codexOnly])), "no worker with agent=claude");
    assert.equal(
      waitReason({ agent: "claude" }, facts([codexOnly, worker({ labels: {}, agents: ["claude"] })])),
      "waiting for a worker's next poll",
    );
  });
});

describe("a run's one state", () => {
  const run = (acked: number, terminal: number | null = null) => ({
    ackedSourceSeq: acked,
    terminalSourceSeq: terminal,
  });
  it("judges the terminal, then an ended dispatch, then the queue, then the events", () => {
    assert.equal(runStateOf(run(4, 4), { state: "claimed" }), "ended");
    assert.equal(runStateOf(run(0), { state: "ended" }), "ended");
    assert.equal(runStateOf(run(0), { state: "queued" }), "queued");
    assert.equal(runStateOf(run(0), { state: "claimed" }), "claimed");
    assert.equal(runStateOf(run(3), { state: "claimed" }), "running");
    assert.equal(runStateOf(run(0), null), "pending");
    assert.equal(runStateOf(run(2), null), "running");
  });
});
