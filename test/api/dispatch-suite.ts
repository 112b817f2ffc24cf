import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { newWorkerCredential } from "../../src/api/worker-credentials.js";
import type { AuthorityStore } from "../../src/authority/store.js";
import { credentialId } from "../../src/transport/derive.js";
import { unwrap } from "../authority/support.js";
import { until } from "../support/until.js";
import { createRun, startApi, type TestApi } from "./support.js";

let polls = 0;
/** A poll body: a fresh requestId each time unless one is given. */
const pollBody = (overrides: Record<string, unknown> = {}) => ({
  requestId: `poll_${String(++polls).padStart(8, "0")}`,
  labels: { os: "linux" },
  maxRuns: 4,
  draining: false,
  held: [],
  want: 4,
  exited: [],
  released: [],
  ...overrides,
});

/** The run queue over the API: the worker's poll, cancel, tickets by hand and the views, over one store kind. */
export function dispatchApiSuite(kind: string, open: () => Promise<AuthorityStore>, close: () => Promise<void>): void {
  describe(`the run queue over the HTTP API, ${kind}`, () => {
    let store: AuthorityStore;
    let t: TestApi;
    let seq = 0;
    /** What the API told the queue-wait metric: each claim's wait, in ms. */
    const waits: number[] = [];
    const worker = async () => {
      const made = newWorkerCredential(`worker-${kind.toLowerCase()}-${++seq}`, Date.now());
      unwrap(await store.insertWorker(made.row));
      return { id: made.row.workerId, credential: made.credential };
    };
    const poll = (credential: string, body: Record<string, unknown>) =>
      t.call("POST", "/v1/workers/poll", { token: credential, body });
    /** Ends every queued run, so that one test's runs are not the next one's. */
    const drainQueue = async () => {
      for (const d of await store.queuedRuns(1000)) unwrap(await store.cancelQueued(d.runId, Date.now()));
    };
    before(async () => {
      store = await open();
      t = await startApi(store, {
        dispatch: { graceMs: 60_000, heartbeatMs: 5_000, maxAttempts: 2 },
        runClaimed: (waitedMs) => waits.push(waitedMs),
      });
    });
    after(async () => {
      await t.api.close();
      await store.close();
      await close();
    });

    it("queues a created run and says why it waits", async () => {
      await drainQueue();
      const runId = await createRun(t, { labels: { os: "plan9" } });
      const run = await t.call("GET", `/v1/runs/${runId}`, { scope: "read" });
      assert.equal(run.json.run.state, "queued");
      assert.equal(run.json.run.dispatch.state, "queued");
      assert.match(run.json.run.dispatch.waiting, /^no (worker registered|live worker|worker with os=plan9)$/);
      const w = await worker();
      assert.equal((await poll(w.credential, pollBody({ want: 0 }))).status, 200);
      const again = await t.call("GET", `/v1/runs/${runId}`, { scope: "read" });
      assert.equal(again.json.run.dispatch.waiting, "no worker with os=plan9");
      const listed = await t.call("GET", "/v1/runs?state=queued", { scope: "read" });
      assert.ok(listed.json.runs.some((r: { runId: string }) => r.runId === runId));
      assert.ok(listed.json.runs.every((r: { state: string }) => r.state === "queued"));
    });

    it("hands claims out by priority with tickets the store holds, once per requestId", async () => {
      await drainQueue();
      const low = await createRun(t, { labels: { os: "linux" }, priority: 1 });
      const high = await createRun(t, { labels: { os: "linux" }, priority: 9 });
      const elsewhere = await createRun(t, { labels: { os: "mac" }, priority: 50 });
      const w = await worker();
      const body = pollBody({ want: 2 });
      const timed = waits.length;
      const first = await poll(w.credential, body);
      assert.equal(first.status, 200, first.text);
      assert.deepEqual(
        first.json.claims.map((c: { runId: string }) => c.runId),
        [high, low],
        "priority first; the mac run is not this worker's",
      );
      for (const claim of first.json.claims) {
        assert.match(claim.connectUrl, new RegExp(`${claim.runId}$`));
        assert.equal(claim.attempt, 1);
        const stored = await store.credential(credentialId(claim.ticket));
        assert.equal(stored?.runId, claim.runId, "the ticket handed out is the one the store holds");
        assert.equal(stored?.usedAtUnixMs, null);
      }
      const retry = await poll(w.credential, body);
      assert.deepEqual(
        retry.json.claims.map((c: { runId: string }) => c.runId),
        [high, low],
        "a retry of the same poll hands out the same claims",
      );
      assert.notEqual(retry.json.claims[0].ticket, first.json.claims[0].ticket, "with fresh tickets");
      const timedNow = waits.slice(timed);
      assert.equal(timedNow.length, 2, "each claim's queue wait is timed once, not again for the retry");
      assert.ok(
        timedNow.every((ms) => ms >= 0 && ms < 60_000),
        `waits ${timedNow}`,
      );
      const view = await t.call("GET", `/v1/runs/${high}`, { scope: "read" });
      assert.equal(view.json.run.state, "claimed");
      assert.equal(view.json.run.dispatch.workerId, w.id);
      assert.equal((await t.call("GET", `/v1/runs/${elsewhere}`, { scope: "read" })).json.run.state, "queued");
      // The worker no longer holds them (it never started them): they go back to the queue.
      const next = await poll(w.credential, pollBody({ want: 0, held: [] }));
      assert.deepEqual(next.json.claims, []);
      assert.equal((await t.call("GET", `/v1/runs/${high}`, { scope: "read" })).json.run.state, "queued");
      const workers = await t.call("GET", "/v1/workers", { scope: "read" });
      const listed = workers.json.workers.find((x: { workerId: string }) => x.workerId === w.id);
      assert.equal(listed.health, "live");
      assert.deepEqual(listed.labels, { os: "linux" });
    });

    it("holds a poll until a run is queued, then claims it", async () => {
      await drainQueue();
      const w = await worker();
      let answered = false;
      const held = poll(w.credential, pollBody({ want: 1, waitMs: 20_000 })).finally(() => (answered = true));
      // Its first pass heartbeats (the store says so) and finds nothing: from then on it is held.
      await until(async () => (await store.worker(w.id))?.lastSeenAtUnixMs !== null, "the poll's first pass");
      assert.equal(answered, false, "with nothing to claim the poll is held");
      const runId = await createRun(t, { labels: { os: "linux" } });
      const answer = await held;
      assert.deepEqual(
        answer.json.claims.map((c: { runId: string }) => c.runId),
        [runId],
      );
    });

    it("keeps caps: a run over a cap waits with the cap as its reason", async () => {
      await drainQueue();
      unwrap(await store.setCap("team=red", 1));
      try {
        const a = await createRun(t, { labels: { os: "linux", team: "red" }, priority: 5 });
        const b = await createRun(t, { labels: { os: "linux", team: "red" }, priority: 4 });
        const c = await createRun(t, { labels: { os: "linux", team: "blue" }, priority: 3 });
        const w = await worker();
        const answer = await poll(w.credential, pollBody({ labels: { os: "linux", team: "red" }, want: 3 }));
        assert.deepEqual(
          answer.json.claims.map((x: { runId: string }) => x.runId),
          [a],
          "b is over the red cap; c's team=blue is not this worker's",
        );
        const waiting = await t.call("GET", `/v1/runs/${b}`, { scope: "read" });
        assert.equal(waiting.json.run.dispatch.waiting, "cap team=red 1/1");
        const caps = await t.call("GET", "/v1/workers", { scope: "read" });
        assert.deepEqual(
          caps.json.caps.find((x: { scope: string }) => x.scope === "team=red"),
          { scope: "team=red", max: 1, active: 1 },
        );
        unwrap(await store.cancelQueued(c, Date.now()));
        // a's runner exits before any event: the run goes back (attempt 1 of 2), and b may now be claimed.
        const after = await poll(
          w.credential,
          pollBody({
            labels: { os: "linux", team: "red" },
            held: [],
            exited: [{ runId: a, exitCode: 1, signal: null }],
            want: 1,
          }),
        );
        assert.equal(after.json.claims.length, 1);
        assert.ok([a, b].includes(after.json.claims[0].runId));
      } finally {
        unwrap(await store.setCap("team=red", null));
      }
    });

    it("cancels a queued run at once, and queues run.cancel for a claimed one", async () => {
      await drainQueue();
      const queued = await createRun(t, { labels: { os: "linux" } });
      const cancelled = await t.call("POST", `/v1/runs/${queued}/cancel`, { scope: "operate" });
      assert.equal(cancelled.status, 200, cancelled.text);
      assert.equal(cancelled.json.run.state, "ended");
      assert.equal(cancelled.json.run.dispatch.endReason, "cancelled");
      const again = await t.call("POST", `/v1/runs/${queued}/cancel`, { scope: "operate" });
      assert.equal(again.status, 409);
      assert.equal(again.json.code, "run_ended");
      const command = await t.call("POST", `/v1/runs/${queued}/commands`, {
        scope: "operate",
        body: { type: "turn.start", payload: { text: "more", turnId: "turn_x" } },
      });
      assert.equal(command.json.code, "run_ended", "a cancelled run takes no command");
      const w = await worker();
      assert.deepEqual((await poll(w.credential, pollBody())).json.claims, [], "nor a worker");

      const claimedRun = await createRun(t, { labels: { os: "linux" } });
      const claim = await poll(w.credential, pollBody({ want: 1 }));
      assert.equal(claim.json.claims[0].runId, claimedRun);
      const asked = await t.call("POST", `/v1/runs/${claimedRun}/cancel`, { scope: "operate" });
      assert.equal(asked.status, 200, asked.text);
      assert.equal(asked.json.run.state, "claimed");
      const types = asked.json.commands.map((c: { type: string }) => c.type);
      assert.equal(types.filter((x: string) => x === "run.cancel").length, 1, "run.cancel queued for its runner");
      await t.call("POST", `/v1/runs/${claimedRun}/cancel`, { scope: "operate" });
      assert.equal(
        (await store.commands(claimedRun)).filter((c) => c.type === "run.cancel").length,
        1,
        "asked twice, queued once",
      );
    });

    it("takes a run out of the queue when a ticket is issued by hand, and refuses one a worker holds", async () => {
      await drainQueue();
      const byHand = await createRun(t, { labels: { os: "linux" } });
      const ticket = await t.call("POST", `/v1/runs/${byHand}/tickets`, { scope: "admin" });
      assert.equal(ticket.status, 201, ticket.text);
      const view = await t.call("GET", `/v1/runs/${byHand}`, { scope: "read" });
      assert.equal(view.json.run.state, "claimed");
      assert.equal(view.json.run.dispatch.workerId, null);
      const w = await worker();
      assert.deepEqual((await poll(w.credential, pollBody())).json.claims, [], "no worker starts it too");
      const held = await createRun(t, { labels: { os: "linux" } });
      assert.equal((await poll(w.credential, pollBody({ want: 1 }))).json.claims[0].runId, held);
      const refused = await t.call("POST", `/v1/runs/${held}/tickets`, { scope: "admin" });
      assert.equal(refused.status, 409);
      assert.equal(refused.json.code, "run_claimed");
    });

    it("keeps worker credentials and API tokens apart, and refuses a revoked worker", async () => {
      const w = await worker();
      const asToken = await t.call("GET", "/v1/runs", { token: w.credential });
      assert.equal(asToken.status, 403);
      assert.equal(asToken.json.code, "scope_insufficient");
      const tokenPolls = await poll(t.tokens.admin, pollBody());
      assert.equal(tokenPolls.status, 401, "an API token claims nothing");
      const forged = await poll(`${w.credential.slice(0, -1)}${w.credential.endsWith("A") ? "B" : "A"}`, pollBody());
      assert.equal(forged.status, 401);
      unwrap(await store.revokeWorker(w.id, Date.now(), 2));
      const revoked = await poll(w.credential, pollBody());
      assert.equal(revoked.status, 401);
      assert.equal(revoked.json.code, "token_invalid");
    });

    it("accepts a run of a catalog agent, labelled agent=NAME, for a worker advertising it; refuses an unknown or contradicted name", async () => {
      await drainQueue();
      const created = await t.call("POST", "/v1/runs", {
        scope: "operate",
        body: {
          agent: { kind: "profile", profile: "claude" },
          prompt: "hi",
          labels: { os: "linux" },
          protocolVersion: 1,
        },
      });
      assert.equal(created.status, 201, created.text);
      const runId = created.json.run.runId as string;
      const run = await t.call("GET", `/v1/runs/${runId}`, { scope: "read" });
      assert.deepEqual(run.json.run.labels, { os: "linux", agent: "claude" });
      assert.deepEqual(run.json.run.spec.labels, { os: "linux", agent: "claude" }, "the spec says what it carries");

      const codex = await worker();
      const busy = await poll(codex.credential, pollBody({ agents: ["codex"] }));
      assert.equal(busy.status, 200, busy.text);
      assert.deepEqual(busy.json.claims, [], "a worker advertising only codex does not claim a claude run");
      const waiting = await t.call("GET", `/v1/runs/${runId}`, { scope: "read" });
      assert.equal(waiting.json.run.dispatch.waiting, "no worker with agent=claude");

      const claude = await worker();
      const claimed = await poll(claude.credential, pollBody({ agents: ["codex", "claude"] }));
      assert.deepEqual(
        claimed.json.claims.map((c: { runId: string; harnessArgs: string[] }) => [c.runId, c.harnessArgs]),
        [[runId, ["--agent", "claude"]]],
      );
      const listed = await t.call("GET", "/v1/workers", { scope: "read" });
      const mine = listed.json.workers.find((w: { workerId: string }) => w.workerId === claude.id);
      assert.deepEqual(mine.agents, ["codex", "claude"]);

      const unknown = await t.call("POST", "/v1/runs", {
        scope: "operate",
        body: { agent: { kind: "profile", profile: "clade" } },
      });
      assert.equal(unknown.status, 422);
      assert.equal(unknown.json.code, "agent_profile_unknown");
      assert.match(unknown.json.message, /"clade".*claude, codex, gemini, opencode/);
      const contradicted = await t.call("POST", "/v1/runs", {
        scope: "operate",
        body: { agent: { kind: "profile", profile: "claude" }, labels: { agent: "codex" } },
      });
      assert.equal(contradicted.status, 400, "a request at fault, as every invalid_request");
      assert.deepEqual([contradicted.json.code, contradicted.json.path], ["invalid_request", "/labels/agent"]);
      const same = await t.call("POST", "/v1/runs", {
        scope: "operate",
        body: { agent: { kind: "profile", profile: "claude" }, labels: { agent: "claude" } },
      });
      assert.equal(same.status, 201, same.text);
      const badName = await poll(claude.credential, pollBody({ agents: ["Claude; rm -rf /"] }));
      assert.equal(badName.status, 400);
      assert.equal(badName.json.path, "/agents/0");
    });

    it("refuses a malformed poll with the path at fault", async () => {
      const w = await worker();
      const bad = await poll(w.credential, { ...pollBody(), requestId: "x" });
      assert.equal(bad.status, 400);
      assert.equal(bad.json.path, "/requestId");
      const extra = await poll(w.credential, { ...pollBody(), colour: "red" });
      assert.equal(extra.status, 400);
    });
  });
}
