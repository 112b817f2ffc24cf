import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { newApiToken } from "../../src/api/tokens.js";
import type { AuthorityStore } from "../../src/authority/store.js";
import { unwrap } from "../authority/support.js";
import { until } from "../support/until.js";
import { follow } from "./sse-client.js";
import { checker, createRun, fakeRunner, judgeStream, startApi, type TestApi } from "./support.js";

/** What the store holds of runs and commands: a refusal must leave it unchanged. */
async function storeShape(store: AuthorityStore) {
  const out: Record<string, number> = {};
  for (const runId of await store.runIds()) out[runId] = (await store.commands(runId)).length;
  return out;
}

/** The API's behaviour over one store kind: the SQLite and PostgreSQL tests both run it. */
export function apiSuite(kind: string, open: () => Promise<AuthorityStore>, close: () => Promise<void>): void {
  describe(`the HTTP API v1 over ${kind}`, () => {
    let store: AuthorityStore;
    let t: TestApi;
    before(async () => {
      store = await open();
      t = await startApi(store, { limits: { bodyLimit: 8192, feedPollMs: 20 } });
    });
    after(async () => {
      await t.api.close();
      await store.close();
      await close();
    });

    it("refuses bad input with typed errors and creates nothing half-way", async () => {
      const spec = { agent: { kind: "fake", script: "happy-path" }, protocolVersion: 1 };
      const runId = await createRun(t, {}, { "idempotency-key": "first" });
      const revoked = newApiToken("admin", { nowMs: Date.now() });
      unwrap(await store.insertApiToken(revoked.row));
      unwrap(await store.revokeApiToken(revoked.row.tokenId, Date.now()));
      const expired = newApiToken("admin", { nowMs: Date.now() - 10_000, expiresAtUnixMs: Date.now() - 1 });
      unwrap(await store.insertApiToken(expired.row));
      const before = await storeShape(store);
      const cases: Array<[string, () => ReturnType<TestApi["call"]>, number, string, string?]> = [
        ["malformed JSON", () => t.call("POST", "/v1/runs", { raw: '{"agent": ' }), 400, "invalid_json"],
        [
          "a member named twice",
          () => t.call("POST", "/v1/runs", { raw: '{"agent":{"kind":"fake","script":"a"},"prompt":"x","prompt":"y"}' }),
          400,
          "invalid_json",
        ],
        [
          "an unknown member",
          () => t.call("POST", "/v1/runs", { body: { ...spec, colour: "red" } }),
          400,
          "invalid_request",
          "/colour",
        ],
        [
          "a wrong type",
          () => t.call("POST", "/v1/runs", { body: { ...spec, priority: "high" } }),
          400,
          "invalid_request",
          "/priority",
        ],
        [
          "a body over the limit",
          () => t.call("POST", "/v1/runs", { body: { ...spec, prompt: "x".repeat(9000) } }),
          413,
          "body_too_large",
        ],
        [
          "a body that is not JSON",
          () => t.call("POST", "/v1/runs", { raw: "agent=fake", headers: { "content-type": "text/plain" } }),
          415,
          "unsupported_media_type",
        ],
        ["an unknown run", () => t.call("GET", "/v1/runs/run_nobody"), 404, "unknown_run", "/runId"],
        ["an unknown route", () => t.call("GET", "/v1/nothing"), 404, "not_found"],
        [
          "a read token creating a run",
          () => t.call("POST", "/v1/runs", { scope: "read", body: spec }),
          403,
          "scope_insufficient",
        ],
        [
          "an operate token asking a ticket",
          () => t.call("POST", `/v1/runs/${runId}/tickets`, { scope: "operate", body: {} }),
          403,
          "scope_insufficient",
        ],
        ["no token", () => t.call("GET", "/v1/runs", { scope: null }), 401, "token_missing"],
        [
          "a forged token",
          () => t.call("GET", "/v1/runs", { token: `prp_tok_0000000000000000_${"A".repeat(43)}` }),
          401,
          "token_invalid",
        ],
        ["a revoked token", () => t.call("GET", "/v1/runs", { token: revoked.token }), 401, "token_invalid"],
        ["an expired token", () => t.call("GET", "/v1/runs", { token: expired.token }), 401, "token_invalid"],
        [
          "an Idempotency-Key replayed with another body",
          () =>
            t.call("POST", "/v1/runs", {
              scope: "operate",
              body: { ...spec, prompt: "other" },
              headers: { "idempotency-key": "first" },
            }),
          422,
          "idempotency_key_reused",
        ],
        [
          "an agent profile that does not exist",
          () => t.call("POST", "/v1/runs", { body: { agent: { kind: "profile", profile: "clade" } } }),
          422,
          "agent_profile_unknown",
          "/agent/profile",
        ],
        [
          "a command with an unknown member",
          () => t.call("POST", `/v1/runs/${runId}/commands`, { body: { type: "run.cancel", payload: {}, extra: 1 } }),
          400,
          "invalid_request",
          "/extra",
        ],
        [
          "a command type the API does not send",
          () => t.call("POST", `/v1/runs/${runId}/commands`, { body: { type: "runner.shutdown", payload: {} } }),
          400,
          "invalid_request",
          "/type",
        ],
        [
          "a payload that is not an object",
          () => t.call("POST", `/v1/runs/${runId}/commands`, { body: { type: "run.cancel", payload: [] } }),
          400,
          "invalid_request",
          "/payload",
        ],
        [
          "a limit past the most",
          () => t.call("GET", "/v1/runs?limit=501"),
          400,
          "invalid_request",
          "/querystring/limit",
        ],
      ];
      for (const [what, send, status, code, path] of cases) {
        const r = await send();
        assert.equal(r.status, status, `${what}: ${r.text}`);
        assert.equal(r.json?.code, code, `${what}: ${r.text}`);
        assert.equal(typeof r.json?.message, "string", what);
        assert.deepEqual(
          Object.keys(r.json).filter((k) => !["code", "message", "path"].includes(k)),
          [],
          `${what}: no wrapper`,
        );
        if (path !== undefined) assert.equal(r.json.path, path, what);
        assert.equal(r.headers.get("cache-control"), "no-store", what);
        assert.equal(r.headers.get("set-cookie"), null, what);
      }
      assert.deepEqual(await storeShape(store), before, "no refused request left anything in the store");
    });

    it("creates a run once per Idempotency-Key, with its opening commands", async () => {
      const body = {
        agent: { kind: "fake", script: "happy-path" },
        prompt: "fix it",
        labels: { team: "a" },
        protocolVersion: 1,
      };
      const first = await t.call("POST", "/v1/runs", {
        scope: "operate",
        body,
        headers: { "idempotency-key": "k-create" },
      });
      assert.equal(first.status, 201, first.text);
      const again = await t.call("POST", "/v1/runs", {
        scope: "operate",
        body,
        headers: { "idempotency-key": "k-create" },
      });
      assert.equal(again.status, 200, again.text);
      assert.equal(again.json.run.runId, first.json.run.runId);
      assert.deepEqual(
        first.json.commands.map((c: any) => c.type),
        ["run.prepare", "session.open", "turn.start"],
      );
      assert.equal((await store.commands(first.json.run.runId)).length, 3, "the retry queued nothing more");
      // Another token with the same key is another caller: another run.
      const other = await t.call("POST", "/v1/runs", {
        scope: "admin",
        body,
        headers: { "idempotency-key": "k-create" },
      });
      assert.equal(other.status, 201);
      assert.notEqual(other.json.run.runId, first.json.run.runId);
      const got = await t.call("GET", `/v1/runs/${first.json.run.runId}`, { scope: "read" });
      assert.equal(got.status, 200);
      assert.equal(got.json.run.state, "queued", "an API-created run waits in the queue");
      assert.deepEqual(got.json.run.labels, { team: "a" });
      assert.deepEqual(got.json.run.spec, body);
      assert.equal(got.json.session.timeline, undefined, "no per-event list in the run");
      assert.equal(got.json.identity.runId, first.json.run.runId);
    });

    it("queues a command once per Idempotency-Key and refuses the key with another body", async () => {
      const runId = await createRun(t);
      const cmd = { type: "turn.start", payload: { text: "go on", turnId: "turn_two" } };
      const first = await t.call("POST", `/v1/runs/${runId}/commands`, {
        scope: "operate",
        body: cmd,
        headers: { "idempotency-key": "c1" },
      });
      assert.equal(first.status, 201, first.text);
      assert.equal(first.json.created, true);
      const again = await t.call("POST", `/v1/runs/${runId}/commands`, {
        scope: "operate",
        body: cmd,
        headers: { "idempotency-key": "c1" },
      });
      assert.equal(again.status, 200, again.text);
      assert.deepEqual(
        [again.json.commandId, again.json.controllerSeq, again.json.created],
        [first.json.commandId, first.json.controllerSeq, false],
      );
      const other = await t.call("POST", `/v1/runs/${runId}/commands`, {
        scope: "operate",
        body: { type: "run.cancel", payload: {} },
        headers: { "idempotency-key": "c1" },
      });
      assert.deepEqual([other.status, other.json.code], [422, "idempotency_key_reused"]);
      assert.equal((await store.commands(runId)).length, 3, "run.prepare, session.open and the one turn.start");
    });

    it("lists runs by state, label and text, a page at a time", async () => {
      const tag = `list${Date.now()}`;
      const ids: string[] = [];
      for (let i = 0; i < 5; i++)
        ids.push(await createRun(t, { labels: { batch: tag, parity: i % 2 === 0 ? "even" : "odd" } }));
      // Its runner is started by hand, as a ticket by hand claims it first.
      unwrap(await store.claimByHand(ids[0]!, Date.now()));
      const runner = await fakeRunner(store, ids[0]!, 1);
      await runner.emit();
      const seen: string[] = [];
      let next: string | null = null;
      do {
        const page: any = await t.call(
          "GET",
          `/v1/runs?label=batch:${tag}&limit=2${next ? `&after=${encodeURIComponent(next)}` : ""}`,
          { scope: "read" },
        );
        assert.equal(page.status, 200, page.text);
        assert.ok(page.json.runs.length <= 2);
        seen.push(...page.json.runs.map((r: any) => r.runId));
        next = page.json.next;
      } while (next !== null);
      assert.deepEqual([...seen].sort(), [...ids].sort(), "every run once over the pages");
      const even = await t.call("GET", `/v1/runs?label=batch:${tag}&label=parity:even`, { scope: "read" });
      assert.deepEqual(even.json.runs.map((r: any) => r.runId).sort(), [ids[0], ids[2], ids[4]].sort());
      const running = await t.call("GET", `/v1/runs?label=batch:${tag}&state=running`, { scope: "read" });
      assert.deepEqual(
        running.json.runs.map((r: any) => r.runId),
        [ids[0]],
      );
      assert.equal(running.json.runs[0].eventCount, 1);
      const text = await t.call("GET", `/v1/runs?text=${encodeURIComponent(ids[3]!)}`, { scope: "read" });
      assert.deepEqual(
        text.json.runs.map((r: any) => r.runId),
        [ids[3]],
      );
    });

    it("checks an answer against the request as asked (its choices, the action a choice means), and shows the request's form", async () => {
      const runId = await createRun(t);
      const runner = await fakeRunner(store, runId, 1);
      await runner.emit({
        eventType: "runtime_request.created",
        payload: {
          request: {
            schema: "paperclip.runtime_request.v1",
            requestKind: "runtime",
            requestId: "request_1",
            type: "permission",
            status: "pending",
            prompt: "Run npm install?",
            choices: [
              { key: "allow", label: "Allow" },
              { key: "allow_always", label: "Allow always" },
              { key: "deny", label: "Deny" },
            ],
          },
        },
      });
      const run = await t.call("GET", `/v1/runs/${runId}`, { scope: "read" });
      assert.deepEqual(run.json.requests, [
        {
          requestId: "request_1",
          type: "permission",
          prompt: "Run npm install?",
          choices: [
            { key: "allow", label: "Allow" },
            { key: "allow_always", label: "Allow always" },
            { key: "deny", label: "Deny" },
          ],
          input: null,
        },
      ]);
      assert.equal(run.json.run.terminalState, null);
      assert.equal(typeof run.json.run.lastEventAt, "string");
      const answer = (resolution: Record<string, unknown>) =>
        t.call("POST", `/v1/runs/${runId}/commands`, {
          scope: "operate",
          body: { type: "request.resolve", payload: { requestId: "request_1", resolution } },
        });
      const before = (await store.commands(runId)).length;
      for (const [resolution, path] of [
        [{ action: "maybe" }, "/payload/resolution/action"],
        [{ action: "accept", choice: "always" }, "/payload/resolution/choice"],
        [{ action: "accept" }, "/payload/resolution/choice"],
        [{ action: "accept", choice: "allow_always" }, "/payload/resolution/action"],
      ] as const) {
        const refused = await answer(resolution);
        assert.deepEqual(
          [refused.status, refused.json.code, refused.json.path],
          [400, "invalid_answer", path],
          JSON.stringify(resolution),
        );
      }
      assert.equal((await store.commands(runId)).length, before, "no refused answer was queued");
      // Must-fail twin: the answer that fits is queued.
      const fits = await answer({ action: "accept_for_session", choice: "allow_always" });
      assert.equal(fits.status, 201, fits.text);
      assert.equal(fits.json.requestId, "request_1");
    });

    it("refuses commands for an ended run, and answers to unknown or answered requests", async () => {
      const runId = await createRun(t);
      const runner = await fakeRunner(store, runId, 1);
      await runner.emit({
        eventType: "runtime_request.created",
        payload: {
          request: {
            schema: "paperclip.runtime_request.v1",
            requestKind: "runtime",
            requestId: "request_1",
            type: "permission",
            status: "pending",
            prompt: "Allow?",
          },
        },
      });
      const answer = (requestId: string) =>
        t.call("POST", `/v1/runs/${runId}/commands`, {
          scope: "operate",
          body: { type: "request.resolve", payload: { requestId, resolution: { action: "decline" } } },
        });
      const unknown = await answer("request_nobody");
      assert.deepEqual(
        [unknown.status, unknown.json.code, unknown.json.path],
        [404, "unknown_request", "/payload/requestId"],
      );
      const first = await answer("request_1");
      assert.equal(first.status, 201, first.text);
      const second = await answer("request_1");
      assert.deepEqual([second.status, second.json.code], [409, "request_already_answered"]);
      const cancel = { type: "run.cancel", payload: {} };
      const queued = await t.call("POST", `/v1/runs/${runId}/commands`, {
        scope: "operate",
        body: cancel,
        headers: { "idempotency-key": "cancel-1" },
      });
      assert.equal(queued.status, 201, queued.text);
      await runner.terminal();
      const retry = await t.call("POST", `/v1/runs/${runId}/commands`, {
        scope: "operate",
        body: cancel,
        headers: { "idempotency-key": "cancel-1" },
      });
      assert.deepEqual(
        [retry.status, retry.json.commandId, retry.json.created],
        [200, queued.json.commandId, false],
        "a retry of a command queued before the end is answered as queued",
      );
      const before = (await store.commands(runId)).length;
      const late = await t.call("POST", `/v1/runs/${runId}/commands`, {
        scope: "operate",
        body: { type: "run.cancel", payload: {} },
      });
      assert.deepEqual([late.status, late.json.code], [409, "run_ended"]);
      assert.equal((await store.commands(runId)).length, before, "nothing queued for an ended run");
      const run = await t.call("GET", `/v1/runs/${runId}`, { scope: "read" });
      assert.equal(run.json.run.state, "ended");
      assert.equal(run.json.terminal?.runTerminalState, "succeeded");
    });

    it("serves event pages byte for byte as committed", async () => {
      const runId = await createRun(t);
      const runner = await fakeRunner(store, runId, 1);
      for (let i = 0; i < 7; i++) await runner.emit({ payload: { text: `é \u2028 "quoted" ${i}` } });
      await runner.terminal();
      const log = await store.eventLog(runId, 0, 100);
      const all = await t.call("GET", `/v1/runs/${runId}/events`, { scope: "read" });
      assert.equal(
        all.text,
        `{"events":[${log.map((r) => `{"seq":${r.sourceSeq},"event":${r.envelope}}`).join(",")}],"next":8,"ended":true}`,
      );
      const page = await t.call("GET", `/v1/runs/${runId}/events?after=2&limit=3`, { scope: "read" });
      assert.deepEqual(
        page.json.events.map((e: any) => e.seq),
        [3, 4, 5],
      );
      assert.deepEqual([page.json.next, page.json.ended], [5, false]);
    });

    it("filters event pages by type and text, paging on by seq", async () => {
      const runId = await createRun(t);
      const runner = await fakeRunner(store, runId, 1);
      for (let i = 0; i < 12; i++) await runner.emit({ payload: { text: i % 5 === 0 ? `Needle ${i}` : `hay ${i}` } });
      await runner.terminal();
      const seqs = async (query: string) => {
        const page = await t.call("GET", `/v1/runs/${runId}/events?${query}`, { scope: "read" });
        assert.equal(page.status, 200, page.text);
        return { seqs: page.json.events.map((e: any) => e.seq), next: page.json.next, ended: page.json.ended };
      };
      const log = await store.eventLog(runId, 0, 100);
      const needles = log.filter((r) => /needle/i.test(r.envelope)).map((r) => r.sourceSeq);
      assert.equal(needles.length, 3, "the fake events carry three needles");
      assert.deepEqual(await seqs("q=NEEDLE"), { seqs: needles, next: log.at(-1)!.sourceSeq, ended: true });
      // A full page stops at its last match; the next starts after it.
      assert.deepEqual(await seqs("q=needle&limit=2"), { seqs: needles.slice(0, 2), next: needles[1], ended: false });
      assert.deepEqual((await seqs(`q=needle&after=${needles[1]}`)).seqs, needles.slice(2));
      const terminal = log.at(-1)!.sourceSeq;
      assert.deepEqual((await seqs("type=run.terminal")).seqs, [terminal]);
      assert.deepEqual((await seqs("type=nothing,run.terminal")).seqs, [terminal], "a comma list");
      assert.deepEqual((await seqs("type=nothing&type=run.terminal")).seqs, [terminal], "repeated");
      assert.deepEqual((await seqs("type=run.terminal&q=needle")).seqs, [], "both must match");
      const refused = await t.call("GET", `/v1/runs/${runId}/events?q=`, { scope: "read" });
      assert.equal(refused.status, 400, "an empty search is refused, not read as no filter");
    });

    it("streams a run as SSE: a follower cut off mid-run resumes by Last-Event-ID with every event once", async () => {
      const runId = await createRun(t);
      const runner = await fakeRunner(store, runId, 1);
      for (let i = 0; i < 5; i++) await runner.emit();
      const first = follow(t.api.url, `/v1/runs/${runId}/events`, t.tokens.read);
      assert.equal(await first.status, 200);
      const steady = follow(t.api.url, `/v1/runs/${runId}/events`, t.tokens.read);
      for (let i = 0; i < 20; i++) await runner.emit();
      await until(
        () => first.events().length >= 12,
        () => `the follower to get 12 events, got ${first.events().length}`,
        10_000,
      );
      first.cut();
      await first.closed;
      const got = first.events();
      const lastId = got.at(-1)!.seq;
      for (let i = 0; i < 20; i++) await runner.emit();
      const resumed = follow(t.api.url, `/v1/runs/${runId}/events`, t.tokens.read, { "last-event-id": String(lastId) });
      for (let i = 0; i < 10; i++) await runner.emit();
      await runner.terminal();
      await Promise.all([resumed.closed, steady.closed]);
      assert.ok(resumed.ended() && steady.ended(), "each stream ends with event: end after run.terminal");
      const log = await store.eventLog(runId, 0, 1000);
      assert.equal(judgeStream([...got, ...resumed.events()], log), null, "cut and resumed: every event once");
      assert.equal(judgeStream(steady.events(), log), null, "a steady follower: every event once");
      for (const e of steady.events()) checker.checkSchema("PrpEvent", JSON.parse(e.data));
      // The judge's must-fail twins: it sees one event dropped and one duplicated.
      const joined = [...got, ...resumed.events()];
      assert.match(
        judgeStream(
          joined.filter((e) => e.seq !== 17),
          log,
        ) ?? "",
        /received \d+ events/,
      );
      const doubled = [...joined.slice(0, 10), joined[9]!, ...joined.slice(10, -1)];
      assert.match(judgeStream(doubled, log) ?? "", /event 11: seq 10/);
      // A follower arriving after the end gets the history and the end at once.
      const late = follow(t.api.url, `/v1/runs/${runId}/events?after=40`, t.tokens.read);
      await late.closed;
      assert.deepEqual(
        late.events().map((e) => e.seq),
        log.filter((r) => r.sourceSeq > 40).map((r) => r.sourceSeq),
      );
      assert.ok(late.ended());
    });

    it("issues a ticket with prp-runnerd's arguments to an admin token", async () => {
      const runId = await createRun(t);
      const r = await t.call("POST", `/v1/runs/${runId}/tickets`, { scope: "admin" });
      assert.equal(r.status, 201, r.text);
      assert.match(r.json.ticket, /\S/);
      assert.equal(r.json.environment.PAPERCLIP_RUNNER_BOOTSTRAP_TICKET, r.json.ticket);
      assert.equal(r.json.connectUrl, `ws://127.0.0.1:1/api/runner/v1/connect/${runId}`);
      assert.ok(!r.json.runnerArgs.includes(r.json.ticket), "never the ticket on a command line");
      assert.deepEqual(
        r.json.runnerArgs.slice(r.json.runnerArgs.indexOf("--script"), r.json.runnerArgs.indexOf("--script") + 2),
        ["--script", "happy-path"],
      );
    });

    it("serves the OpenAPI document without a token", async () => {
      const r = await t.call("GET", "/v1/openapi.json", { scope: null });
      assert.equal(r.status, 200, r.text);
      assert.equal(typeof r.json.openapi, "string");
    });
  });
}
