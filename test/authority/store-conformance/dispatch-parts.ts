import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type {
  AuthorityStore,
  CreateRunRequest,
  DispatchRow,
  NewCommittedEvent,
  NewTicket,
  WorkerPoll,
} from "../../../src/authority/store.js";
import { authority, codeOf, connect, event, identity, unwrap } from "../support.js";
import type { ConformancePart, StoreFactory } from "./contract.js";

/** A run created through the API: queued, with these labels and priority, submitted at `queuedAt`. */
const request = (
  n: number,
  labels: Record<string, string> = { os: "linux" },
  priority = 0,
  queuedAt = 1000 + n,
): CreateRunRequest => ({
  identity: identity(n),
  init: { protocolVersion: 3, nowMs: queuedAt },
  spec: {
    spec: `{"prompt":"task ${n}"}`,
    specDigest: `sha256:${String(n).padStart(64, "0")}`,
    labels,
    priority,
    createdBy: null,
  },
  commands: [
    {
      commandId: "command_prp_00000001",
      controllerSeq: 1,
      type: "run.prepare",
      payload: `{"run":${n}}`,
      envelope: `{"commandId":"command_prp_00000001","run":${n}}`,
    },
  ],
});

const workerId = (n: number) => `wkr_${String(n).padStart(16, "0")}`;

let minted = 0;
const mintTicket = (runId: string, nowMs: number): NewTicket => ({
  runId,
  credentialId: `cred_dispatch_${++minted}`,
  authKeyDigest: `sha256:${String(minted).padStart(64, "0")}`,
  issuedAtUnixMs: nowMs,
  // Far ahead of the test clock's tickets: a runner's connect prunes expired credentials.
  expiresAtUnixMs: Date.UTC(2100, 0, 1),
});

let requests = 0;
const poll = (n: number, overrides: Partial<WorkerPoll> = {}): WorkerPoll => ({
  workerId: workerId(n),
  requestId: `request-${++requests}`,
  labels: { os: "linux" },
  maxRuns: 8,
  draining: false,
  held: [],
  want: 8,
  exited: [],
  released: [],
  nowMs: 10_000,
  maxAttempts: 3,
  mintTicket,
  ...overrides,
});

const row = (seq: number, n: number, eventType?: string): NewCommittedEvent => {
  const e = event(seq, n, eventType ? { eventType } : {});
  return {
    sourceSeq: seq,
    sourceEventId: e.sourceEventId as string,
    eventType: e.eventType as string,
    priority: e.priority as number,
    envelope: JSON.stringify(e),
  };
};

const runIds = (claims: Array<{ dispatch: DispatchRow }>) => claims.map((c) => c.dispatch.runId);
const one = async (store: AuthorityStore, runId: string): Promise<DispatchRow> => (await store.dispatch([runId]))[0]!;

async function withWorkers(store: AuthorityStore, count: number): Promise<void> {
  for (let n = 1; n <= count; n++)
    unwrap(
      await store.insertWorker({
        workerId: workerId(n),
        name: `worker-${n}`,
        digest: `sha256:${String(n).padStart(64, "a")}`,
        createdAtUnixMs: n,
      }),
    );
}

/** A runner of the run connected and `events` events committed (a started run when > 0). */
async function runnerOf(store: AuthorityStore, n: number, events: string[] = []): Promise<string> {
  const a = authority("", { store });
  const conn = (await connect(a, `run_${n}`)).connectionId;
  for (const [i, type] of events.entries())
    unwrap(await store.commitEvent(`run_${n}`, conn, row(i + 1, n, type === "event" ? undefined : type), 2000 + i));
  return conn;
}

/** The run queue (schema version 4): workers, claims, caps, take-backs. The same tests for each database. */
export const dispatchPartsConformance: ConformancePart = (name: string, factory: StoreFactory): void => {
  describe(`AuthorityStore dispatch parts conformance: ${name}`, () => {
    it("createRun queues the run; queuedRuns and claims follow priority, then submit time", async () => {
      const { store } = await factory.open();
      unwrap(await store.createRun(request(1, { os: "linux" }, 1, 1001)));
      unwrap(await store.createRun(request(2, { os: "linux" }, 5, 1002)));
      unwrap(await store.createRun(request(3, { os: "linux" }, 5, 1000)));
      const queued = await one(store, "run_1");
      assert.deepEqual(
        { state: queued.state, priority: queued.priority, queuedAt: queued.queuedAtUnixMs, attempts: queued.attempts },
        { state: "queued", priority: 1, queuedAt: 1001, attempts: 0 },
      );
      assert.deepEqual(queued.labels, { os: "linux" });
      assert.deepEqual(
        (await store.queuedRuns(10)).map((d) => d.runId),
        ["run_3", "run_2", "run_1"],
      );
      await withWorkers(store, 1);
      const first = unwrap(await store.pollWorker(poll(1, { want: 2, requestId: "request-order" })));
      assert.deepEqual(runIds(first.claims), ["run_3", "run_2"]);
      const claim = first.claims[0]!;
      assert.equal(claim.dispatch.state, "claimed");
      assert.equal(claim.dispatch.workerId, workerId(1));
      assert.equal(claim.dispatch.claimRequestId, "request-order");
      assert.equal(claim.dispatch.attempts, 1);
      assert.ok(claim.dispatch.claimedAtUnixMs !== null);
      assert.equal(claim.identity.runId, "run_3");
      assert.equal(claim.spec.specDigest, request(3).spec.specDigest);
      assert.equal(claim.protocolVersion, 3);
      const ticket = await store.credential(claim.credentialId);
      assert.equal(ticket?.kind, "bootstrap");
      assert.equal(ticket?.runId, "run_3");
      assert.equal(first.worker.activeRuns, 2);
      assert.equal(first.worker.lastSeenAtUnixMs, 10_000);
      assert.deepEqual(first.worker.labels, { os: "linux" });
      await store.close();
    });

    it("a worker claims only runs whose every label it holds with the same value", async () => {
      const { store } = await factory.open();
      unwrap(await store.createRun(request(1, { os: "mac" }, 9)));
      unwrap(await store.createRun(request(2, { os: "linux", gpu: "yes" }, 8)));
      unwrap(await store.createRun(request(3, {}, 0)));
      await withWorkers(store, 2);
      const linux = unwrap(await store.pollWorker(poll(1, { labels: { os: "linux", arch: "x64" } })));
      assert.deepEqual(runIds(linux.claims), ["run_3"], "a run without labels goes anywhere; os=mac and gpu do not");
      const mac = unwrap(await store.pollWorker(poll(2, { labels: { os: "mac" } })));
      assert.deepEqual(runIds(mac.claims), ["run_1"]);
      assert.equal((await one(store, "run_2")).state, "queued");
      await store.close();
    });

    it("an advertised agent holds agent=<name>: a worker advertising claude claims an agent=claude run, one advertising codex does not", async () => {
      const { store } = await factory.open();
      unwrap(await store.createRun(request(1, { agent: "claude" }, 1)));
      unwrap(await store.createRun(request(2, { agent: "claude", os: "linux" }, 0)));
      await withWorkers(store, 2);
      const codex = unwrap(await store.pollWorker(poll(1, { labels: { os: "linux" }, agents: ["codex"] })));
      assert.deepEqual(runIds(codex.claims), [], "codex is not claude");
      assert.deepEqual(codex.worker.agents, ["codex"], "the advertised agents are stored with the worker");
      const claude = unwrap(
        await store.pollWorker(poll(2, { labels: { os: "linux" }, agents: ["codex", "claude"], want: 2 })),
      );
      assert.deepEqual(runIds(claude.claims), ["run_1", "run_2"]);
      const listed = await store.workers();
      assert.deepEqual(
        listed.map((w) => w.agents),
        [["codex"], ["codex", "claude"]],
      );
      // A poll without agents advertises none: what it held before is not kept.
      const none = unwrap(await store.pollWorker(poll(2, { want: 0 })));
      assert.deepEqual(none.worker.agents, []);
      await store.close();
    });

    it("caps: `*` and `key=value` never let more runs be active than max; a capped run is skipped, a later one claimed", async () => {
      const { store } = await factory.open();
      assert.equal(codeOf(await store.setCap("nokey", 1)), "invalid_request");
      assert.equal(codeOf(await store.setCap("*", -1)), "invalid_request");
      unwrap(await store.setCap("*", 2));
      for (let n = 1; n <= 4; n++) unwrap(await store.createRun(request(n, { os: "linux" }, 10 - n)));
      await withWorkers(store, 2);
      assert.deepEqual(runIds(unwrap(await store.pollWorker(poll(1))).claims), ["run_1", "run_2"]);
      assert.deepEqual(runIds(unwrap(await store.pollWorker(poll(2))).claims), [], "the * cap is full");
      assert.deepEqual(await store.caps(), [{ scope: "*", max: 2, active: 2 }]);

      unwrap(await store.setCap("*", null));
      unwrap(await store.setCap("gpu=yes", 1));
      unwrap(await store.createRun(request(5, { os: "linux", gpu: "yes" }, 20)));
      unwrap(await store.createRun(request(6, { os: "linux", gpu: "yes" }, 19)));
      unwrap(await store.createRun(request(7, { os: "linux" }, 18)));
      const claimed = unwrap(await store.pollWorker(poll(2, { want: 3, labels: { os: "linux", gpu: "yes" } })));
      assert.deepEqual(runIds(claimed.claims), ["run_5", "run_7", "run_3"], "run_6 waits behind gpu=yes's cap");
      assert.equal((await one(store, "run_6")).state, "queued");
      assert.deepEqual(await store.caps(), [{ scope: "gpu=yes", max: 1, active: 1 }]);
      await store.close();
    });

    it("a worker claims at most maxRuns minus what it holds, and nothing while draining", async () => {
      const { store } = await factory.open();
      for (let n = 1; n <= 6; n++) unwrap(await store.createRun(request(n)));
      await withWorkers(store, 1);
      const first = unwrap(await store.pollWorker(poll(1, { maxRuns: 2, want: 5 })));
      assert.equal(first.claims.length, 2);
      const held = runIds(first.claims);
      const second = unwrap(await store.pollWorker(poll(1, { maxRuns: 3, want: 5, held })));
      assert.equal(second.claims.length, 1);
      const draining = unwrap(
        await store.pollWorker(
          poll(1, { maxRuns: 8, want: 5, draining: true, held: [...held, ...runIds(second.claims)] }),
        ),
      );
      assert.equal(draining.claims.length, 0);
      assert.equal(draining.worker.draining, true);
      assert.equal(draining.worker.activeRuns, 3);
      await store.close();
    });

    it("a retry of the same requestId hands out the same claims with new tickets and claims nothing new", async () => {
      const { store } = await factory.open();
      for (let n = 1; n <= 4; n++) unwrap(await store.createRun(request(n)));
      await withWorkers(store, 1);
      const body = poll(1, { want: 2 });
      const first = unwrap(await store.pollWorker(body));
      const again = unwrap(await store.pollWorker(body));
      assert.deepEqual(runIds(again.claims), runIds(first.claims));
      assert.deepEqual(first.claimedNow, runIds(first.claims), "the first poll made these claims");
      assert.deepEqual(again.claimedNow, [], "the retry made none: the queue-wait metric counts each claim once");
      assert.notDeepEqual(
        again.claims.map((c) => c.credentialId),
        first.claims.map((c) => c.credentialId),
      );
      assert.deepEqual(
        again.claims.map((c) => c.dispatch.attempts),
        [1, 1],
      );
      assert.equal((await store.queuedRuns(10)).length, 2, "nothing new claimed");
      assert.equal((await store.credential(again.claims[0]!.credentialId))?.kind, "bootstrap");
      await store.close();
    });

    it("reconcile: a claim the worker does not hold is taken back: requeued, credentials revoked, connection cleared", async () => {
      const o = await factory.open();
      const { store } = o;
      unwrap(await store.createRun(request(1)));
      unwrap(await store.createRun(request(2)));
      await withWorkers(store, 2);
      const claims = unwrap(await store.pollWorker(poll(1, { want: 1 }))).claims;
      assert.deepEqual(runIds(claims), ["run_1"]);
      const conn = await runnerOf(store, 1);
      assert.equal((await o.rawRun("run_1")).current_connection_id, conn);
      const theirs = unwrap(await store.pollWorker(poll(2, { want: 1 }))).claims;
      assert.deepEqual(runIds(theirs), ["run_2"]);

      const next = unwrap(await store.pollWorker(poll(1, { want: 0, held: ["run_2"] })));
      assert.deepEqual(next.lost, ["run_2"], "a run held but not its own is lost");
      const taken = await one(store, "run_1");
      assert.deepEqual(
        [taken.state, taken.workerId, taken.claimRequestId, taken.claimedAtUnixMs, taken.attempts],
        ["queued", null, null, null, 1],
      );
      assert.equal(taken.queuedAtUnixMs, 1001, "its place in the queue is kept");
      assert.ok((await store.credential(claims[0]!.credentialId))!.revokedAtUnixMs !== null, "its ticket is revoked");
      const raw = await o.rawRun("run_1");
      assert.equal(raw.current_connection_id, null);
      assert.equal(Number(raw.revocation_epoch), 1);
      assert.equal((await one(store, "run_2")).workerId, workerId(2), "another worker's claim is untouched");
      await store.close();
    });

    it("exits: a terminal ends the dispatch, an exit before any event takes it back, one after events ends it runner_exited", async () => {
      const { store } = await factory.open();
      for (let n = 1; n <= 4; n++) unwrap(await store.createRun(request(n)));
      await withWorkers(store, 1);
      const held = runIds(unwrap(await store.pollWorker(poll(1, { want: 4 }))).claims);
      await runnerOf(store, 1, ["event", "run.terminal"]);
      await runnerOf(store, 3, ["event"]);
      unwrap(
        await store.pollWorker(
          poll(1, {
            want: 0,
            held: held.filter((r) => r === "run_4"),
            maxAttempts: 1,
            exited: [
              { runId: "run_1", exitCode: 0, signal: null },
              { runId: "run_2", exitCode: null, signal: "SIGKILL" },
              { runId: "run_3", exitCode: 3, signal: null },
              { runId: "run_9", exitCode: 0, signal: null },
            ],
          }),
        ),
      );
      const [d1, d2, d3, d4] = await store.dispatch(["run_1", "run_2", "run_3", "run_4"]);
      assert.deepEqual([d1!.state, d1!.endReason, d1!.endDetail], ["ended", null, null]);
      assert.deepEqual(
        [d2!.state, d2!.endReason, d2!.endDetail],
        ["ended", "runner_exited", "signal SIGKILL before any event"],
        "past maxAttempts (1), an exit before any event ends it",
      );
      assert.deepEqual(
        [d3!.state, d3!.endReason, d3!.endDetail],
        ["ended", "runner_exited", "exit 3 before the run's terminal"],
      );
      assert.ok(d1!.endedAtUnixMs !== null);
      assert.equal(d4!.state, "claimed");

      unwrap(await store.createRun(request(5)));
      const five = runIds(unwrap(await store.pollWorker(poll(1, { want: 1, held: ["run_4"] }))).claims);
      assert.deepEqual(five, ["run_5"]);
      unwrap(
        await store.pollWorker(
          poll(1, { want: 0, held: ["run_4"], exited: [{ runId: "run_5", exitCode: 1, signal: null }] }),
        ),
      );
      const requeued = await one(store, "run_5");
      assert.deepEqual([requeued.state, requeued.attempts], ["queued", 1], "under maxAttempts it is requeued");
      await store.close();
    });

    it("released claims are requeued without counting an attempt; a started one is ignored", async () => {
      const { store } = await factory.open();
      unwrap(await store.createRun(request(1)));
      unwrap(await store.createRun(request(2)));
      await withWorkers(store, 1);
      const held = runIds(unwrap(await store.pollWorker(poll(1, { want: 2 }))).claims);
      await runnerOf(store, 2, ["event"]);
      const after = unwrap(await store.pollWorker(poll(1, { want: 0, held, released: held })));
      const [d1, d2] = await store.dispatch(["run_1", "run_2"]);
      assert.deepEqual([d1!.state, d1!.attempts, d1!.workerId], ["queued", 0, null]);
      assert.deepEqual([d2!.state, d2!.workerId], ["claimed", workerId(1)]);
      assert.deepEqual(after.lost, ["run_1"], "the released run is no longer the worker's");
      await store.close();
    });

    it("past maxAttempts a lost claim ends worker_lost; a started run (a command result) is never requeued", async () => {
      const { store } = await factory.open();
      unwrap(await store.createRun(request(1)));
      unwrap(await store.createRun(request(2, { os: "mac" })));
      await withWorkers(store, 2);
      for (let attempt = 1; attempt <= 2; attempt++) {
        assert.deepEqual(runIds(unwrap(await store.pollWorker(poll(1, { want: 1, maxAttempts: 2 }))).claims), [
          "run_1",
        ]);
        unwrap(await store.pollWorker(poll(1, { want: 0, maxAttempts: 2 })));
      }
      const lost = await one(store, "run_1");
      assert.deepEqual(
        [lost.state, lost.attempts, lost.endReason, lost.endDetail],
        ["ended", 2, "worker_lost", "its worker no longer runs it"],
      );

      assert.deepEqual(runIds(unwrap(await store.pollWorker(poll(2, { labels: { os: "mac" } }))).claims), ["run_2"]);
      const conn = await runnerOf(store, 2);
      const delivered = unwrap(await store.deliverNextCommand("run_2", conn, false, 3000));
      unwrap(
        await store.recordCommandResult(
          "run_2",
          conn,
          { commandId: delivered!.commandId, status: "completed", result: "{}" },
          3001,
        ),
      );
      unwrap(await store.pollWorker(poll(2, { labels: { os: "mac" }, want: 0, maxAttempts: 1 })));
      const started = await one(store, "run_2");
      assert.deepEqual([started.state, started.workerId], ["claimed", workerId(2)], "left to its runner and lease");
      await store.close();
    });

    it("sweepWorkers takes back a silent worker's claims, ends started ones whose lease expired, and is idempotent", async () => {
      const { store } = await factory.open();
      for (let n = 1; n <= 3; n++) unwrap(await store.createRun(request(n)));
      await withWorkers(store, 1);
      unwrap(await store.pollWorker(poll(1, { want: 3, nowMs: 10_000 })));
      await runnerOf(store, 2, ["event"]);
      await runnerOf(store, 3, ["event", "run.terminal"]);
      assert.deepEqual(await store.sweepWorkers(15_000, 5_000, 3), [], "not silent past grace yet");
      const swept = await store.sweepWorkers(15_001, 5_000, 3);
      assert.deepEqual(
        swept.map((d) => [d.runId, d.state, d.endReason]),
        [
          ["run_1", "queued", null],
          ["run_3", "ended", null],
        ],
      );
      assert.equal((await one(store, "run_2")).state, "claimed", "its runner holds a live lease");
      const expiry = (await store.run("run_2"))!.lastLeaseExpiresAtUnixMs!;
      assert.deepEqual(await store.sweepWorkers(expiry - 1, 5_000, 3), []);
      const gone = await store.sweepWorkers(expiry + 1, 5_000, 3);
      assert.deepEqual(
        gone.map((d) => [d.runId, d.state, d.endReason, d.endDetail]),
        [["run_2", "ended", "worker_lost", "its worker and its runner are gone (lease expired)"]],
      );
      assert.deepEqual(await store.sweepWorkers(expiry + 2, 5_000, 3), [], "idempotent");
      await store.close();
    });

    it("insertWorker refuses a taken name; revokeWorker keeps the first time, takes back its claims, and its polls are refused", async () => {
      const { store } = await factory.open();
      await withWorkers(store, 1);
      assert.equal(
        codeOf(
          await store.insertWorker({
            workerId: workerId(2),
            name: "worker-1",
            digest: `sha256:${"b".repeat(64)}`,
            createdAtUnixMs: 5,
          }),
        ),
        "worker_exists",
      );
      assert.deepEqual(
        (await store.workers()).map((w) => [w.workerId, w.maxRuns, w.lastSeenAtUnixMs, w.activeRuns]),
        [[workerId(1), 0, null, 0]],
      );
      unwrap(await store.createRun(request(1)));
      unwrap(await store.pollWorker(poll(1, { want: 1 })));
      const revoked = unwrap(await store.revokeWorker(workerId(1), 700, 3));
      assert.equal(revoked.revokedAtUnixMs, 700);
      assert.equal(revoked.activeRuns, 0);
      assert.equal((await one(store, "run_1")).state, "queued");
      assert.equal(unwrap(await store.revokeWorker(workerId(1), 900, 3)).revokedAtUnixMs, 700);
      assert.equal(codeOf(await store.pollWorker(poll(1))), "worker_revoked");
      assert.equal(codeOf(await store.pollWorker(poll(7))), "unknown_worker");
      assert.equal(codeOf(await store.revokeWorker(workerId(7), 900, 3)), "unknown_worker");
      assert.equal((await store.worker(workerId(1)))?.revokedAtUnixMs, 700);
      await store.close();
    });

    it("pendingCommandTimes: the unanswered commands of runs not ended, connected or not, oldest first, at most the limit", async () => {
      const { store } = await factory.open();
      // Each run is created with one command, queued at its submit time 1000 + n.
      for (let n = 1; n <= 4; n++) unwrap(await store.createRun(request(n)));
      assert.deepEqual(await store.pendingCommandTimes(10), [1001, 1002, 1003, 1004], "no runner connected yet");
      assert.deepEqual(await store.pendingCommandTimes(2), [1001, 1002]);
      await withWorkers(store, 1);
      unwrap(await store.pollWorker(poll(1, { want: 2 })));
      const conn = await runnerOf(store, 1);
      unwrap(await store.deliverNextCommand("run_1", conn, false, 3000));
      assert.deepEqual(await store.pendingCommandTimes(10), [1001, 1002, 1003, 1004], "delivered is not answered");
      unwrap(
        await store.recordCommandResult(
          "run_1",
          conn,
          { commandId: "command_prp_00000001", status: "completed", result: "{}" },
          3001,
        ),
      );
      await runnerOf(store, 2, ["event", "run.terminal"]);
      unwrap(await store.cancelQueued("run_3", 3002));
      assert.deepEqual(await store.pendingCommandTimes(10), [1004], "answered, ended by a terminal, cancelled");
      await store.close();
    });

    it("cancelQueued ends a queued run and revokes its credentials; a claimed one is not cancelled; an ended one is refused", async () => {
      const o = await factory.open();
      const { store } = o;
      unwrap(await store.createRun(request(1)));
      unwrap(await store.createRun(request(2)));
      unwrap(await store.registerRun(identity(3), { protocolVersion: 3, nowMs: 1 }));
      await withWorkers(store, 1);
      unwrap(await store.pollWorker(poll(1, { want: 1 })));
      const cancelled = unwrap(await store.cancelQueued("run_2", 5000));
      assert.equal(cancelled.cancelled, true);
      assert.deepEqual([cancelled.dispatch.state, cancelled.dispatch.endReason], ["ended", "cancelled"]);
      assert.equal(Number((await o.rawRun("run_2")).revocation_epoch), 1);
      const claimed = unwrap(await store.cancelQueued("run_1", 5000));
      assert.deepEqual([claimed.cancelled, claimed.dispatch.state], [false, "claimed"]);
      assert.equal(codeOf(await store.cancelQueued("run_2", 5000)), "run_ended");
      assert.equal(codeOf(await store.cancelQueued("run_3", 5000)), "not_queued");
      await store.close();
    });

    it("claimByHand takes a queued run out of the workers' reach; refuses a worker's claim and an ended dispatch", async () => {
      const { store } = await factory.open();
      for (let n = 1; n <= 3; n++) unwrap(await store.createRun(request(n, { os: "linux" }, 10 - n)));
      unwrap(await store.registerRun(identity(4), { protocolVersion: 3, nowMs: 1 }));
      const hand = unwrap(await store.claimByHand("run_1", 100));
      assert.deepEqual([hand!.state, hand!.workerId, hand!.attempts], ["claimed", null, 1]);
      assert.equal(unwrap(await store.claimByHand("run_1", 101))!.state, "claimed", "twice is fine");
      await withWorkers(store, 1);
      assert.deepEqual(runIds(unwrap(await store.pollWorker(poll(1, { want: 1 }))).claims), ["run_2"]);
      assert.equal(codeOf(await store.claimByHand("run_2", 102)), "run_claimed");
      unwrap(await store.cancelQueued("run_3", 103));
      assert.equal(codeOf(await store.claimByHand("run_3", 104)), "run_ended");
      assert.equal(unwrap(await store.claimByHand("run_4", 105)), null);
      await store.close();
    });

    it("listRuns: queued, claimed, pending, running and ended, each as a filter, with the dispatch row", async () => {
      const { store } = await factory.open();
      for (let n = 1; n <= 5; n++) unwrap(await store.createRun(request(n, { os: "linux" }, 10 - n)));
      unwrap(await store.registerRun(identity(6), { protocolVersion: 3, nowMs: 1006 }));
      await withWorkers(store, 1);
      assert.deepEqual(runIds(unwrap(await store.pollWorker(poll(1, { want: 3 }))).claims), [
        "run_1",
        "run_2",
        "run_3",
      ]);
      await runnerOf(store, 2, ["event"]);
      await runnerOf(store, 3, ["event", "run.terminal"]);
      unwrap(await store.cancelQueued("run_5", 2000));
      const all = await store.listRuns({ limit: 500 });
      assert.deepEqual(
        all.runs.map((r) => [r.runId, r.state]),
        [
          ["run_6", "pending"],
          ["run_5", "ended"],
          ["run_4", "queued"],
          ["run_3", "ended"],
          ["run_2", "running"],
          ["run_1", "claimed"],
        ],
      );
      assert.equal(all.runs[0]!.dispatch, null);
      assert.equal(all.runs[5]!.dispatch?.workerId, workerId(1));
      assert.equal(all.runs[1]!.dispatch?.endReason, "cancelled");
      const filtered = async (state: "queued" | "claimed" | "pending" | "running" | "ended") =>
        (await store.listRuns({ limit: 500, state })).runs.map((r) => r.runId);
      assert.deepEqual(await filtered("queued"), ["run_4"]);
      assert.deepEqual(await filtered("claimed"), ["run_1"]);
      assert.deepEqual(await filtered("pending"), ["run_6"]);
      assert.deepEqual(await filtered("running"), ["run_2"]);
      assert.deepEqual(await filtered("ended"), ["run_5", "run_3"]);
      await store.close();
    });

    if (name === "PostgreSQL")
      it("concurrent polls from two instances never claim one run twice and never pass a cap", async () => {
        const o = await factory.open();
        const other = await o.reopen();
        const stores = [o.store, other];
        for (let n = 1; n <= 40; n++) unwrap(await o.store.createRun(request(n, { os: "linux" }, n % 3)));
        unwrap(await o.store.setCap("*", 5));
        await withWorkers(o.store, 8);
        const seen: string[] = [];
        const polls = Array.from({ length: 8 }, async (_, i) => {
          const store = stores[i % 2]!;
          let held: string[] = [];
          for (let round = 0; round < 6; round++) {
            const out = unwrap(await store.pollWorker(poll(i + 1, { want: 2, held, maxRuns: 4 })));
            seen.push(...runIds(out.claims));
            const active = (await store.caps())[0]!.active;
            assert.ok(active <= 5, `the * cap holds: ${active} active`);
            // Each worker finishes one run per round, so slots free up and the others race for them.
            const mine = [...held, ...runIds(out.claims)];
            const done = mine.shift();
            held = mine;
            if (done)
              unwrap(
                await store.pollWorker(
                  // maxAttempts 1: the exit (before any event) ends the run rather than requeueing it.
                  poll(i + 1, { want: 0, held, maxAttempts: 1, exited: [{ runId: done, exitCode: 0, signal: null }] }),
                ),
              );
          }
        });
        await Promise.all(polls);
        const claimedNow = (await o.store.dispatch(Array.from({ length: 40 }, (_, n) => `run_${n + 1}`))).filter(
          (d) => d.state === "claimed",
        );
        assert.ok(claimedNow.length <= 5);
        const distinct = new Set(claimedNow.map((d) => d.runId));
        assert.equal(distinct.size, claimedNow.length);
        // A run is claimed at most once ever here: exits end it, and nothing is taken back.
        assert.equal(new Set(seen).size, seen.length, "no run claimed twice");
        assert.ok(seen.length >= 5, `claims happened (${seen.length})`);
        await other.close();
        await o.store.close();
      });
  });
};
