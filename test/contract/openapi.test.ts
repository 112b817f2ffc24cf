import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { relative } from "node:path";
import { describe, it } from "node:test";
import { Validator } from "@seriousme/openapi-schema-validator";
import Ajv2020Module from "ajv/dist/2020.js";
import { EVENT_SCHEMA_IDS, openApiDocument } from "../../src/contract/api/openapi.js";
import { API_SCHEMAS } from "../../src/contract/api/schemas.js";
import { ajvOptions } from "../../src/contract/compile.js";
import { DATE_TIME } from "../../src/contract/formats.js";
import { apiGeneratedFiles } from "../../scripts/api-files.js";
import { packageRoot } from "../../src/contract/package-root.js";
import { checkResponse, checkSchema, responseChecker } from "../support/openapi-responses.js";
import { AT, event } from "./samples.js";

const Ajv2020 = Ajv2020Module.default;
type Json = Record<string, any>;

const clone = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

async function validateDocument(document: unknown): Promise<{ valid: boolean; errors?: unknown }> {
  const validator = new Validator();
  return validator.validate(clone(document) as Record<string, unknown>);
}

/** Every `$ref` in the document with the `$id` base it is resolved against. */
function refs(value: unknown, base: string, into: Array<[string, string]> = []): Array<[string, string]> {
  if (Array.isArray(value)) for (const item of value) refs(item, base, into);
  else if (value !== null && typeof value === "object") {
    const here = typeof (value as Json).$id === "string" ? ((value as Json).$id as string) : base;
    for (const [key, item] of Object.entries(value)) {
      if (key === "$ref" && typeof item === "string") into.push([here, item]);
      else refs(item, here, into);
    }
  }
  return into;
}

function pointer(root: unknown, fragment: string): unknown {
  let node = root;
  for (const token of fragment
    .replace(/^\//, "")
    .split("/")
    .filter((t) => t !== "")) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Json)[token.replace(/~1/g, "/").replace(/~0/g, "~")];
  }
  return node;
}

const summary = (overrides: Json = {}): Json => ({
  runId: "run_1",
  state: "running",
  protocolVersion: 3,
  eventCount: 2,
  createdAt: AT,
  labels: { team: "blue" },
  priority: 0,
  spec: { agent: { kind: "fake", script: "hello" }, prompt: "do it" },
  harness: "prp-fake-harness",
  startedAt: AT,
  lastEventAt: AT,
  terminalState: null,
  disposition: null,
  dispatch: null,
  pendingRequests: 0,
  ...overrides,
});
const dispatch = (overrides: Json = {}): Json => ({
  state: "queued",
  attempts: 0,
  workerId: null,
  queuedAt: AT,
  claimedAt: null,
  endedAt: null,
  endReason: null,
  endDetail: null,
  waiting: "cap agent=claude 4/4",
  ...overrides,
});
const identity = {
  runnerInstanceId: "runner_1",
  environmentLeaseId: "lease_1",
  runId: "run_1",
  normalizedSessionId: "session_1",
  turnId: "turn_1",
  itemId: "item_1",
};
const pollAnswer = (claim: Json = {}): Json => ({
  workerId: "wkr_0123456789abcdef",
  heartbeatMs: 5000,
  graceMs: 30000,
  claims: [
    {
      runId: "run_1",
      attempt: 1,
      ticket: "bootstrap_x",
      expiresAt: AT,
      connectUrl: "ws://127.0.0.1:1/api/runner/v1/connect/run_1",
      protocolMax: 3,
      identity,
      harnessArgs: ["--script", "happy-path"],
      spec: { agent: { kind: "fake", script: "happy-path" } },
      ...claim,
    },
  ],
  lost: [],
});
const receipt = (overrides: Json = {}): Json => ({
  commandId: "command_1",
  controllerSeq: 3,
  type: "run.cancel",
  status: null,
  delivered: false,
  created: true,
  ...overrides,
});
const run = (overrides: Json = {}): Json => ({
  run: summary(),
  identity: {
    runnerInstanceId: "runner_1",
    environmentLeaseId: "lease_1",
    runId: "run_1",
    normalizedSessionId: "session_1",
    turnId: "turn_1",
    itemId: "item_1",
  },
  position: 2,
  session: { items: [{ itemId: "item_1", text: "…the end", textLength: 9000 }] },
  result: null,
  terminal: null,
  requests: [
    {
      requestId: "request_1",
      type: "permission",
      prompt: "Run it?",
      choices: [{ key: "allow", label: "Allow" }],
      input: null,
    },
  ],
  failure: {
    messages: [],
    diagnostics: [],
    harnessExit: { exitCode: 7, signal: null, stderrTail: ["boom"], droppedLines: 0 },
  },
  turns: [{ turnId: "turn_1", state: "running", items: ["item_1"], requests: ["request_1"] }],
  fileChanges: [fileChange()],
  commands: [receipt(), receipt({ commandId: "command_2", type: "turn.start", text: "Fix the test." })],
  ...overrides,
});
const fileChange = (overrides: Json = {}): Json => ({
  diffId: "tool_1_diff_1",
  itemId: "tool_1",
  turnId: "turn_1",
  complete: false,
  files: [{ path: "src/a.ts", changeKind: "modified", previousPath: null, additions: 2, deletions: 1 }],
  diff: "-a\n+b\n",
  diffBytes: 6,
  diffTruncated: false,
  ...overrides,
});
const ticket = (overrides: Json = {}): Json => ({
  runId: "run_1",
  ticket: "t0p-secret",
  expiresAt: AT,
  connectUrl: "ws://127.0.0.1:7000/runner",
  runnerArgs: ["--connect", "ws://127.0.0.1:7000/runner"],
  environment: { PAPERCLIP_RUNNER_BOOTSTRAP_TICKET: "t0p-secret" },
  ...overrides,
});

describe("the API's OpenAPI document", () => {
  const document = openApiDocument() as Json;

  it("is valid OpenAPI 3.1 by a maintained validator", async () => {
    const result = await validateDocument(document);
    assert.deepEqual(result.errors, undefined);
    assert.equal(result.valid, true);
    assert.equal(document.openapi, "3.1.0");
    assert.equal(document.jsonSchemaDialect, "https://json-schema.org/draft/2020-12/schema");
  });

  it("a broken document is refused by the same validator (must fail)", async () => {
    const noDescription = clone(document);
    delete noDescription.paths["/v1/runs/{runId}"].get.responses["200"].description;
    assert.equal((await validateDocument(noDescription)).valid, false, "a response without a description passed");

    const optionalPathParameter = clone(document);
    optionalPathParameter.paths["/v1/runs/{runId}"].parameters[0].required = false;
    assert.equal((await validateDocument(optionalPathParameter)).valid, false, "an optional path parameter passed");

    const danglingRef = clone(document);
    danglingRef.paths["/v1/runs/{runId}"].get.responses["200"].content["application/json"].schema = {
      $ref: "#/components/schemas/NoSuchSchema",
    };
    assert.equal((await validateDocument(danglingRef)).valid, false, "a dangling $ref passed");

    const badVersion = clone(document);
    badVersion.openapi = 3.1;
    assert.equal((await validateDocument(badVersion)).valid, false, "a numeric openapi version passed");
  });

  it("every $ref resolves, by JSON pointer or by an embedded $id", () => {
    const DOC = "urn:document";
    const byId = new Map<string, unknown>([[DOC, document]]);
    const collect = (value: unknown): void => {
      if (Array.isArray(value)) value.forEach(collect);
      else if (value !== null && typeof value === "object") {
        if (typeof (value as Json).$id === "string") byId.set((value as Json).$id, value);
        Object.values(value).forEach(collect);
      }
    };
    collect(document);
    const all = refs(document, DOC);
    assert.ok(all.length > 50, `only ${all.length} refs found`);
    for (const [base, ref] of all) {
      const [resource, fragment = ""] = ref.split("#");
      const root = byId.get(resource === "" ? base : resource!);
      assert.ok(root !== undefined, `${ref} (from ${base}) names no schema in the document`);
      assert.notEqual(pointer(root, fragment), undefined, `${ref} (from ${base}) points at nothing`);
    }
  });

  it("holds every API schema and the three event envelopes, PrpEvent a oneOf over them", () => {
    const schemas = document.components.schemas as Json;
    for (const name of Object.keys(API_SCHEMAS.$defs)) assert.ok(schemas[name], `${name} is missing`);
    assert.deepEqual(
      schemas.PrpEvent.oneOf,
      EVENT_SCHEMA_IDS.map((id) => ({ $ref: id })),
    );
    const ids = Object.values(schemas)
      .map((s: any) => s.$id)
      .filter(Boolean);
    for (const id of EVENT_SCHEMA_IDS) assert.ok(ids.includes(id), `${id} is not embedded`);
    assert.equal(JSON.stringify(document).includes("#/$defs/RunSpec"), false, "an API ref was not rewritten");
  });

  it("is deterministic", () => {
    assert.equal(JSON.stringify(openApiDocument()), JSON.stringify(document));
  });

  it("its schemas compile under the contract's strict ajv options", () => {
    const ajv = new Ajv2020(ajvOptions(false));
    ajv.addFormat("date-time", DATE_TIME);
    // The components as one schema resource's $defs, refs rewritten to match; embedded contract
    // schemas keep their $ids. Strict mode refuses an unknown keyword or a misplaced one.
    const text = JSON.stringify({ $defs: document.components.schemas });
    const { $defs } = JSON.parse(text.replace(/#\/components\/schemas\//g, "#/$defs/")) as Json;
    const names = Object.keys(API_SCHEMAS.$defs);
    ajv.compile({
      $id: "https://paperclip.dev/prp-kit/api/v1/strict-check.json",
      $defs,
      anyOf: names.map((name) => ({ $ref: `#/$defs/${name}` })),
    });
  });

  it("every operation declares its errors as the shared Error response", () => {
    for (const [path, item] of Object.entries(document.paths as Json)) {
      for (const [verb, operation] of Object.entries(item as Json)) {
        if (verb === "parameters") continue;
        const responses = (operation as Json).responses as Json;
        assert.ok(responses["429"], `${verb} ${path} does not declare 429`);
        for (const [status, response] of Object.entries(responses)) {
          if (Number(status) >= 400)
            assert.match(response.$ref, /^#\/components\/responses\//, `${verb} ${path} ${status}`);
        }
      }
    }
  });

  it("the committed generated files match what the schemas produce (no drift)", async () => {
    const files = await apiGeneratedFiles();
    assert.equal(files.length, 2);
    for (const file of files) {
      const committed = readFileSync(file.path, "utf8").replace(/\r\n/g, "\n");
      assert.ok(committed === file.text, `${relative(packageRoot(), file.path)} drifted: run \`npm run generate:api\``);
    }
  });
});

describe("checkResponse", () => {
  const kinds: Array<[string, string, string, number, Json, Json]> = [
    ["Run", "POST", "/v1/runs", 201, run(), run({ run: summary({ state: "paused" }) })],
    ["Run (GET)", "GET", "/v1/runs/{runId}", 200, run({ result: {}, terminal: {} }), run({ commands: undefined })],
    [
      "Run (GET, an item's text unbounded)",
      "GET",
      "/v1/runs/{runId}",
      200,
      run({ failure: { messages: ["turn.failed: x"], diagnostics: [], harnessExit: null } }),
      run({ session: { items: [{ itemId: "item_1", text: "x".repeat(4001), textLength: 4001 }] } }),
    ],
    [
      "Run (GET, its turns)",
      "GET",
      "/v1/runs/{runId}",
      200,
      run({ turns: [] }),
      run({ turns: [{ turnId: "turn_1", state: "thinking", items: [], requests: [] }] }),
    ],
    [
      "Run (GET, its file changes)",
      "GET",
      "/v1/runs/{runId}",
      200,
      run({ fileChanges: [fileChange({ itemId: null, diff: null, diffBytes: null })] }),
      run({ fileChanges: [fileChange({ files: [{ path: "a", changeKind: "moved" }] })] }),
    ],
    [
      "Run (GET, a diff's text unbounded)",
      "GET",
      "/v1/runs/{runId}",
      200,
      run({ fileChanges: [] }),
      run({ fileChanges: [fileChange({ diff: "x".repeat(65537), diffTruncated: true })] }),
    ],
    [
      "RunList",
      "GET",
      "/v1/runs",
      200,
      { runs: [summary(), summary({ spec: null })], next: "cursor" },
      { runs: [summary({ createdAt: "2026-02-30T00:00:00Z" })], next: null },
    ],
    [
      "RunList (queued runs)",
      "GET",
      "/v1/runs",
      200,
      { runs: [summary({ state: "queued", dispatch: dispatch() })], next: null },
      { runs: [summary({ state: "queued", dispatch: dispatch({ state: "waiting" }) })], next: null },
    ],
    ["Run (cancelled)", "POST", "/v1/runs/{runId}/cancel", 200, run(), run({ run: summary({ state: "cancelled" }) })],
    ["WorkerPollAnswer", "POST", "/v1/workers/poll", 200, pollAnswer(), pollAnswer({ protocolMax: 9 })],
    [
      "WorkerList",
      "GET",
      "/v1/workers",
      200,
      {
        workers: [
          {
            workerId: "wkr_0123456789abcdef",
            name: "build-01",
            labels: { os: "linux" },
            agents: ["claude"],
            maxRuns: 4,
            activeRuns: 1,
            draining: false,
            lastSeenAt: AT,
            health: "live",
            revoked: false,
          },
        ],
        caps: [{ scope: "*", max: 8, active: 1 }],
      },
      { workers: [], caps: [{ scope: "*", max: "eight", active: 1 }] },
    ],
    [
      "RunList (a run waiting for a person)",
      "GET",
      "/v1/runs",
      200,
      { runs: [summary({ pendingRequests: 2 })], next: null },
      { runs: [summary({ pendingRequests: -1 })], next: null },
    ],
    [
      "AgentList",
      "GET",
      "/v1/agents",
      200,
      { profiles: [{ name: "claude", title: "Claude Code" }], scripts: ["happy-path"] },
      { profiles: [{ name: "claude" }], scripts: ["happy-path"] },
    ],
    [
      "EventPage",
      "GET",
      "/v1/runs/{runId}/events",
      200,
      {
        events: [
          { seq: 1, event: event(1) },
          { seq: 2, event: event(3, { sourceSeq: 2 }) },
        ],
        next: 2,
        ended: false,
      },
      { events: [{ seq: 1, event: event(3, { eventType: "no.such.event" }) }], next: 1, ended: false },
    ],
    [
      "CommandReceipt",
      "POST",
      "/v1/runs/{runId}/commands",
      201,
      receipt({ status: "completed" }),
      receipt({ status: "done" }),
    ],
    ["Ticket", "POST", "/v1/runs/{runId}/tickets", 201, ticket(), ticket({ environment: { A: 1 } })],
    [
      "Error",
      "POST",
      "/v1/runs/{runId}/commands",
      409,
      { code: "run_ended", message: "The run has ended." },
      { code: "run_ended", message: "The run has ended.", detail: "extra" },
    ],
    ["Error (401)", "GET", "/v1/runs", 401, { code: "token_missing", message: "x", path: "/" }, { message: "x" }],
  ];
  for (const [kind, method, path, status, valid, invalid] of kinds) {
    it(`${kind}: accepts a valid body and refuses an invalid one (must fail)`, () => {
      checkResponse(method, path, status, valid);
      assert.throws(() => checkResponse(method, path, status, JSON.parse(JSON.stringify(invalid))), /does not match/);
    });
  }

  it("refuses a status the operation does not declare, and an unknown path (must fail)", () => {
    assert.throws(() => checkResponse("GET", "/v1/runs/{runId}", 201, run()), /does not declare/);
    assert.throws(() => checkResponse("GET", "/v1/nothing", 200, {}), /no path/);
    assert.throws(() => checkResponse("DELETE", "/v1/runs", 200, {}), /no DELETE/);
  });

  it("matches a requested path to its template, and checks one schema (an SSE event's data)", () => {
    checkResponse("get", "/v1/runs/run%201/events?after=3", 200, { events: [], next: 3, ended: true });
    assert.throws(
      () => checkResponse("get", "/v1/runs/r1/events", 200, { events: [], next: -1, ended: true }),
      /does not match/,
    );
    assert.throws(() => checkResponse("get", "/v1/runs/r1/nothing", 200, {}), /no path/);
    checkSchema("PrpEvent", event(2));
    assert.throws(() => checkSchema("PrpEvent", event(2, { sourceSeq: 0 })), /does not match/);
    assert.throws(() => checkSchema("NoSuchSchema", {}), /no schema/);
  });

  it("checks against the document it is given: a twin whose Run is closed off refuses a real run", () => {
    const twin = clone(openApiDocument()) as Json;
    twin.components.schemas.Run.required.push("extra");
    assert.throws(() => responseChecker(twin).checkResponse("GET", "/v1/runs/{runId}", 200, run()), /does not match/);
  });
});
