import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { newWorkerCredential } from "../../src/api/worker-credentials.js";
import type { AuthorityStore } from "../../src/authority/store.js";
import { API_SCHEMAS } from "../../src/contract/api/schemas.js";
import { PERMISSION_POLICIES } from "../../src/harness/acp/permissions.js";
import { openStore, tempRoot, unwrap } from "../authority/support.js";
import { startApi, type TestApi } from "./support.js";

const tmp = tempRoot("prp-api-permission-policy-");

/** A RunSpec's permissionPolicy reaches the runner as --permission-policy, for ACP runs only. */
describe("a RunSpec's permission policy", () => {
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
  const claimOf = async (labels: Record<string, string>) => {
    const made = newWorkerCredential(`worker-policy-${labels.os}`, Date.now());
    unwrap(await store.insertWorker(made.row));
    const polled = await t.call("POST", "/v1/workers/poll", {
      token: made.credential,
      body: {
        requestId: `poll_policy_${labels.os}`,
        labels,
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

  it("names the runner's own policies", () => {
    assert.deepEqual(API_SCHEMAS.$defs.RunSpec.properties.permissionPolicy.enum, [...PERMISSION_POLICIES]);
  });

  it("is carried into a worker's claim and a ticket's runner arguments", async () => {
    const command = await create({
      agent: { kind: "command", command: "my-agent --acp" },
      permissionPolicy: "ask",
      labels: { os: "policy" },
    });
    assert.equal(command.status, 201, command.text);
    assert.equal(command.json.run.spec.permissionPolicy, "ask", "the spec says what was asked");
    const claims = await claimOf({ os: "policy" });
    assert.deepEqual(
      claims.map((c) => [c.runId, c.harnessArgs]),
      [
        [
          command.json.run.runId,
          ["--harness", "acp", "--agent-command", "my-agent --acp", "--permission-policy", "ask"],
        ],
      ],
    );
    const profile = await create({ agent: { kind: "profile", profile: "claude" }, permissionPolicy: "allow-reads" });
    assert.equal(profile.status, 201, profile.text);
    const ticket = await t.call("POST", `/v1/runs/${profile.json.run.runId}/tickets`, { scope: "admin" });
    assert.equal(ticket.status, 201, ticket.text);
    const args: string[] = ticket.json.runnerArgs;
    assert.deepEqual(args.slice(args.indexOf("--agent"), args.indexOf("--agent") + 4), [
      "--agent",
      "claude",
      "--permission-policy",
      "allow-reads",
    ]);
  });

  it("is left to the runner's default when not given", async () => {
    const created = await create({ agent: { kind: "command", command: "my-agent" }, labels: { os: "nopolicy" } });
    assert.equal(created.status, 201, created.text);
    const [claim] = await claimOf({ os: "nopolicy" });
    assert.deepEqual(claim?.harnessArgs, ["--harness", "acp", "--agent-command", "my-agent"]);
  });

  it("refuses a policy the runner does not know, and one on a fake-harness run", async () => {
    const unknown = await create({ agent: { kind: "command", command: "my-agent" }, permissionPolicy: "allow-all" });
    assert.equal(unknown.status, 400, unknown.text);
    assert.deepEqual([unknown.json.code, unknown.json.path], ["invalid_request", "/permissionPolicy"]);
    const fake = await create({ agent: { kind: "fake", script: "happy-path" }, permissionPolicy: "ask" });
    assert.equal(fake.status, 400, fake.text);
    assert.deepEqual([fake.json.code, fake.json.path], ["invalid_request", "/permissionPolicy"]);
    assert.match(fake.json.message, /fake-harness run/);
    const listed = await t.call("GET", "/v1/runs?limit=100", { scope: "read" });
    assert.equal(
      listed.json.runs.filter((r: { spec: { permissionPolicy?: string } | null }) => r.spec?.permissionPolicy === "ask")
        .length,
      1,
      "nothing created by a refused request",
    );
  });
});
