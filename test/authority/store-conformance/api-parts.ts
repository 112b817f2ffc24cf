import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CreateRunRequest, NewCommand, NewCommittedEvent, RunListEntry } from "../../../src/authority/store.js";
import { authority, codeOf, connect, event, identity, unwrap } from "../support.js";
import type { ConformancePart, StoreFactory } from "./contract.js";

const token = (n: number, overrides: Record<string, unknown> = {}) => ({
  tokenId: `tok_${String(n).padStart(16, "0")}`,
  digest: `sha256:${String(n).padStart(64, "0")}`,
  scope: "operate" as const,
  label: `token ${n}`,
  createdAtUnixMs: 100 + n,
  expiresAtUnixMs: null,
  revokedAtUnixMs: null,
  ...overrides,
});

const opening = (n: number): NewCommand[] =>
  ["run.prepare", "session.open"].map((type, i) => ({
    commandId: `command_prp_${String(i + 1).padStart(8, "0")}`,
    controllerSeq: i + 1,
    type,
    payload: `{"run":${n}}`,
    envelope: `{"commandId":"command_prp_${String(i + 1).padStart(8, "0")}","run":${n}}`,
  }));

const request = (n: number, overrides: Partial<CreateRunRequest["spec"]> = {}, nowMs = 1000 + n): CreateRunRequest => ({
  identity: identity(n),
  init: { protocolVersion: 3, nowMs },
  spec: {
    spec: `{"agent":{"kind":"fake","script":"happy-path"},"prompt":"task number ${n}"}`,
    specDigest: `sha256:${String(n).padStart(64, "0")}`,
    labels: { team: n % 2 === 0 ? "even" : "odd", os: "linux" },
    priority: n,
    createdBy: "tok_0000000000000001",
    ...overrides,
  },
  commands: opening(n),
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

const ids = (runs: RunListEntry[]) => runs.map((r) => r.runId);

/** The API's store slice (tokens, runs created from a spec, the run list): the same tests for each database. */
export const apiPartsConformance: ConformancePart = (name: string, factory: StoreFactory): void => {
  describe(`AuthorityStore API parts conformance: ${name}`, () => {
    it("stores API tokens by id, lists them, and revokes once (the first time is kept)", async () => {
      const { store } = await factory.open();
      unwrap(await store.insertApiToken(token(1)));
      unwrap(await store.insertApiToken(token(2, { scope: "admin", expiresAtUnixMs: 5000 })));
      assert.equal(codeOf(await store.insertApiToken(token(1))), "token_exists");
      assert.deepEqual(await store.apiToken(token(2).tokenId), token(2, { scope: "admin", expiresAtUnixMs: 5000 }));
      assert.equal(await store.apiToken("tok_ffffffffffffffff"), undefined);
      assert.deepEqual(
        (await store.apiTokens()).map((t) => t.tokenId),
        [token(1).tokenId, token(2).tokenId],
      );
      assert.equal(unwrap(await store.revokeApiToken(token(1).tokenId, 700)).revokedAtUnixMs, 700);
      assert.equal(unwrap(await store.revokeApiToken(token(1).tokenId, 900)).revokedAtUnixMs, 700);
      assert.equal(codeOf(await store.revokeApiToken("tok_ffffffffffffffff", 900)), "unknown_token");
      await store.close();
    });

    it("createRun writes the run, its spec and its opening commands at once; a retry finds them", async () => {
      const { store } = await factory.open();
      const first = unwrap(await store.createRun(request(1)));
      assert.equal(first.created, true);
      assert.equal(first.run.commandCount, 2);
      assert.deepEqual(first.spec.labels, { team: "odd", os: "linux" });
      assert.deepEqual(
        (await store.commands("run_1")).map((c) => [c.controllerSeq, c.type, c.envelope]),
        opening(1).map((c) => [c.controllerSeq, c.type, c.envelope]),
      );
      const again = unwrap(await store.createRun(request(1, {}, 5000)));
      assert.equal(again.created, false);
      assert.deepEqual(again.spec, first.spec);
      assert.equal((await store.commands("run_1")).length, 2, "a retry queues nothing more");
      assert.deepEqual(await store.runSpec("run_1"), first.spec);
      await store.close();
    });

    it("createRun refuses a reused key with another request, a run registered without a spec, and bad opening commands, writing nothing", async () => {
      const { store } = await factory.open();
      unwrap(await store.createRun(request(1)));
      const reused = await store.createRun(request(1, { specDigest: `sha256:${"f".repeat(64)}` }));
      assert.equal(codeOf(reused), "idempotency_key_reused");
      assert.equal((await store.runSpec("run_1"))!.specDigest, request(1).spec.specDigest);

      unwrap(await store.registerRun(identity(2), { protocolVersion: 3, nowMs: 1 }));
      assert.equal(codeOf(await store.createRun(request(2))), "run_exists");
      assert.equal(await store.runSpec("run_2"), undefined);
      assert.equal((await store.commands("run_2")).length, 0);

      const gap = request(3);
      gap.commands = [opening(3)[1]!];
      assert.equal(codeOf(await store.createRun(gap)), "controller_seq_moved");
      assert.equal(await store.run("run_3"), undefined, "nothing half-created");
      await store.close();
    });

    it("listRuns: newest first, filtered by state, labels and text, paged by a cursor without repeats or gaps", async () => {
      const o = await factory.open();
      const { store } = o;
      for (let n = 1; n <= 7; n++) unwrap(await store.createRun(request(n)));
      unwrap(await store.registerRun(identity(8), { protocolVersion: 3, nowMs: 1008 }));
      const a = authority("", { store });
      // A ticket by hand claims the run first (as the API's ticket route does): no worker starts it too.
      unwrap(await store.claimByHand("run_4", 1900));
      unwrap(await store.claimByHand("run_5", 1900));
      const conn4 = (await connect(a, "run_4")).connectionId;
      unwrap(await store.commitEvent("run_4", conn4, row(1, 4), 2000));
      const conn5 = (await connect(a, "run_5")).connectionId;
      unwrap(await store.commitEvent("run_5", conn5, row(1, 5), 2000));
      unwrap(await store.commitEvent("run_5", conn5, row(2, 5, "run.terminal"), 2001));

      const all = await store.listRuns({ limit: 500 });
      assert.deepEqual(ids(all.runs), ["run_8", "run_7", "run_6", "run_5", "run_4", "run_3", "run_2", "run_1"]);
      assert.equal(all.next, null);
      assert.equal(all.runs[0]!.spec, null, "a run registered without the API has no spec");
      assert.deepEqual(
        all.runs.map((r) => r.state),
        ["pending", "queued", "queued", "ended", "running", "queued", "queued", "queued"],
      );

      assert.deepEqual(ids((await store.listRuns({ limit: 500, state: "running" })).runs), ["run_4"]);
      assert.deepEqual(ids((await store.listRuns({ limit: 500, state: "ended" })).runs), ["run_5"]);
      assert.deepEqual(ids((await store.listRuns({ limit: 500, labels: { team: "even" } })).runs), [
        "run_6",
        "run_4",
        "run_2",
      ]);
      assert.deepEqual(ids((await store.listRuns({ limit: 500, labels: { team: "even", os: "mac" } })).runs), []);
      assert.deepEqual(ids((await store.listRuns({ limit: 500, text: "TASK NUMBER 3" })).runs), ["run_3"]);
      assert.deepEqual(ids((await store.listRuns({ limit: 500, text: "run_7" })).runs), ["run_7"]);
      assert.deepEqual(ids((await store.listRuns({ limit: 500, text: "%" })).runs), [], "LIKE wildcards are literal");

      const paged: string[] = [];
      let after: string | undefined;
      for (let pages = 0; pages < 10; pages++) {
        const page = await store.listRuns({ limit: 3, ...(after ? { after } : {}) });
        paged.push(...ids(page.runs));
        if (page.next === null) break;
        after = page.next;
        // A run created between pages is newer than the cursor: it never shifts a later page.
        if (pages === 0) unwrap(await store.createRun(request(9, {}, 9000)));
      }
      assert.deepEqual(paged, ids(all.runs));
      await store.close();
    });
  });
};
