import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { agentList, scriptNames } from "../../src/api/agents-routes.js";
import { ApiError } from "../../src/api/errors.js";
import { builtInCatalogPath, CATALOG_ENV } from "../../src/agents/catalog.js";
import { agentError } from "../../src/agents/agent-error.js";
import { openStore, tempRoot } from "../authority/support.js";
import { createRun, fakeRunner, startApi, type TestApi } from "./support.js";

const tmp = tempRoot("prp-api-agents-");

/** A runtime_request.* event of request `requestId`. */
const requestEvent = (eventType: string, requestId: string) => ({
  eventType,
  payload:
    eventType === "runtime_request.created"
      ? {
          request: {
            schema: "paperclip.runtime_request.v1",
            requestKind: "runtime",
            requestId,
            type: "permission",
            status: "pending",
            prompt: "Run npm install?",
            choices: [{ key: "allow", label: "Allow" }],
          },
        }
      : { requestId },
});

describe("the runs a person is needed for, and the agents a run may name", () => {
  let t: TestApi;
  before(async () => {
    t = await startApi(openStore(tmp.dir()));
  });
  after(async () => {
    await t.api.close();
    await t.store.close();
    tmp.cleanup();
  });

  const pendingOf = async (runId: string) => {
    const listed = await t.call("GET", `/v1/runs?text=${encodeURIComponent(runId)}`, { scope: "read" });
    const one = await t.call("GET", `/v1/runs/${runId}`, { scope: "read" });
    assert.equal(listed.json.runs.length, 1);
    assert.equal(listed.json.runs[0].pendingRequests, one.json.run.pendingRequests, "the list and the run agree");
    return one.json.run.pendingRequests as number;
  };

  it("counts the requests asked and not yet resolved, expired or cancelled; none once the run has ended", async () => {
    const runId = await createRun(t);
    assert.equal(await pendingOf(runId), 0, "a queued run asks nothing");
    const runner = await fakeRunner(t.store, runId, 1);
    await runner.emit(requestEvent("runtime_request.created", "request_1"));
    await runner.emit(requestEvent("runtime_request.created", "request_2"));
    await runner.emit(requestEvent("runtime_request.created", "request_3"));
    assert.equal(await pendingOf(runId), 3);
    await runner.emit(requestEvent("runtime_request.resolved", "request_1"));
    await runner.emit(requestEvent("runtime_request.expired", "request_2"));
    assert.equal(await pendingOf(runId), 1, "request_3 still waits");
    await runner.terminal();
    assert.equal(await pendingOf(runId), 0, "an ended run waits for nobody, whatever it left open");
  });

  it("GET /v1/agents lists the catalog's profiles (the user's too) and the fake harness's scripts", async () => {
    const agents = await t.call("GET", "/v1/agents", { scope: "read" });
    assert.equal(agents.status, 200, agents.text);
    const builtIn = (JSON.parse(readFileSync(builtInCatalogPath(), "utf8")) as { agents: { name: string }[] }).agents;
    assert.deepEqual(
      agents.json.profiles.map((p: { name: string }) => p.name),
      builtIn.map((a) => a.name),
    );
    assert.ok(agents.json.profiles.every((p: { title: string }) => p.title.length > 0));
    assert.ok(agents.json.scripts.includes("happy-path") && agents.json.scripts.includes("permission-input"));
    assert.deepEqual(agents.json.scripts, [...agents.json.scripts].sort());
    assert.equal((await t.call("GET", "/v1/agents", { scope: null })).status, 401, "read scope is needed");

    // A user's catalog adds its profile: the one a create would take, read the same way.
    const own = `${tmp.dir()}-catalog.json`;
    const [first] = builtIn;
    writeFileSync(
      own,
      JSON.stringify({
        schema: "prp-kit.agent_catalog.v1",
        agents: [{ ...first, name: "house-agent", title: "Ours" }],
      }),
    );
    const previous = process.env[CATALOG_ENV];
    process.env[CATALOG_ENV] = own;
    try {
      const withOwn = await t.call("GET", "/v1/agents", { scope: "read" });
      assert.deepEqual(withOwn.json.profiles.at(-1), { name: "house-agent", title: "Ours" });
      const created = await t.call("POST", "/v1/runs", {
        scope: "operate",
        body: { agent: { kind: "profile", profile: "house-agent" } },
      });
      assert.equal(created.status, 201, created.text);
    } finally {
      if (previous === undefined) delete process.env[CATALOG_ENV];
      else process.env[CATALOG_ENV] = previous;
    }
  });

  it("a catalog that cannot be read is the server's fault, said in words (must fail)", () => {
    assert.throws(
      () => agentList(() => agentError("catalog_unreadable", "", "cannot read /nowhere.json"), scriptNames),
      (err: unknown) =>
        err instanceof ApiError &&
        err.code === "agent_catalog_invalid" &&
        err.statusCode === 500 &&
        /cannot read \/nowhere\.json/.test(err.message),
    );
  });
});
