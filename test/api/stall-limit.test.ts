import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { newWorkerCredential } from "../../src/api/worker-credentials.js";
import type { AuthorityStore } from "../../src/authority/store.js";
import { openStore, tempRoot, unwrap } from "../authority/support.js";
import { startApi, type TestApi } from "./support.js";

const tmp = tempRoot("prp-api-stall-limit-");

/** A RunSpec's stallLimitMs and stallGraceMs reach the runner as its stall flags, for any harness. */
describe("a RunSpec's stall limit", () => {
  let store: AuthorityStore;
  let t: TestApi;
  before(async () => {
    store = openStore(tmp.dir());
    t = await startApi(store, { dispatch: { graceMs: 60_000, heartbeatMs: 5_000, maxAttempts: 2 } });
  });
  after(async () => {
    await t.api.close();
    await store.close();
    tmp.cleanup();
  });
  const create = (body: Record<string, unknown>) =>
    t.call("POST", "/v1/runs", { scope: "operate", body: { prompt: "hi", protocolVersion: 1, ...body } });
  const claimOf = async (os: string) => {
    const made = newWorkerCredential(`worker-stall-${os}`, Date.now());
    unwrap(await store.insertWorker(made.row));
    const polled = await t.call("POST", "/v1/workers/poll", {
      token: made.credential,
      body: {
        requestId: `poll_stall_${os}`,
        labels: { os },
        maxRuns: 4,
        draining: false,
        held: [],
        want: 4,
        exited: [],
        released: [],
      },
    });
    assert.equal(polled.status, 200, polled.text);
    return polled.json.claims as Array<{ runId: string; harnessArgs: string[] }>;
  };

  it("is carried into a worker's claim, for a fake harness and an agent alike", async () => {
    const fake = await create({
      agent: { kind: "fake", script: "interrupted" },
      stallLimitMs: 0,
      stallGraceMs: 1_000,
      labels: { os: "stall" },
    });
    assert.equal(fake.status, 201, fake.text);
    assert.equal(fake.json.run.spec.stallLimitMs, 0, "the spec says what was asked");
    const agent = await create({
      agent: { kind: "command", command: "my-agent" },
      stallLimitMs: 120_000,
      labels: { os: "stall" },
    });
    assert.equal(agent.status, 201, agent.text);
    const claims = new Map((await claimOf("stall")).map((c) => [c.runId, c.harnessArgs]));
    assert.deepEqual(claims.get(fake.json.run.runId), [
      "--script",
      "interrupted",
      "--stall-limit-ms",
      "0",
      "--stall-grace-ms",
      "1000",
    ]);
    assert.deepEqual(claims.get(agent.json.run.runId), [
      "--harness",
      "acp",
      "--agent-command",
      "my-agent",
      "--stall-limit-ms",
      "120000",
    ]);
  });

  it("is left to the runner's default when not given", async () => {
    const created = await create({ agent: { kind: "fake", script: "happy-path" }, labels: { os: "nostall" } });
    assert.equal(created.status, 201, created.text);
    const [claim] = await claimOf("nostall");
    assert.deepEqual(claim?.harnessArgs, ["--script", "happy-path"]);
  });

  it("refuses a value that is not a whole number of milliseconds in range, naming the member", async () => {
    for (const [member, value] of [
      ["stallLimitMs", -1],
      ["stallLimitMs", 1.5],
      ["stallLimitMs", "15m"],
      ["stallLimitMs", 604_800_001],
      ["stallGraceMs", -5],
    ] as const) {
      const res = await create({ agent: { kind: "fake", script: "happy-path" }, [member]: value });
      assert.equal(res.status, 400, `${member}=${value}: ${res.text}`);
      assert.deepEqual([res.json.code, res.json.path], ["invalid_request", `/${member}`], res.text);
    }
  });
});
