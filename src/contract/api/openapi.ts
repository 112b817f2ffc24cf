/**
 * The HTTP API v1's OpenAPI 3.1 document, built from the API's own schemas (schemas.ts) and the
 * contract's event schemas (protocol/schemas/), so that neither is restated here. The API's
 * `$defs` become `components.schemas` (their `#/$defs/` refs rewritten); the event envelopes and
 * every schema they reach are embedded beside them with their `$id`s intact, so the absolute refs
 * between contract schemas resolve inside the document. `PrpEvent` becomes a oneOf over the three
 * envelopes. Deterministic: the same schemas give the same document, key for key.
 */
import { loadSchemaFiles, type SchemaFile } from "../schema-files.js";
import { API_SCHEMAS } from "./schemas.js";

/** Where the server serves the document; also its `$self`-like id for validators that need one. */
export const OPENAPI_PATH = "/v1/openapi.json";

/** The `$id`s of the event envelopes a committed event may be, lowest version first. */
export const EVENT_SCHEMA_IDS = [
  "https://paperclip.dev/schemas/prp/v1/event.schema.json",
  "https://paperclip.dev/schemas/prp/v2/event.schema.json",
  "https://paperclip.dev/schemas/prp/v3/event.schema.json",
] as const;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const SCHEMA_ID_PREFIX = "https://paperclip.dev/schemas/";

/** A contract schema's component name: its `$id` below /schemas/, e.g. `prp.v1.event`. */
export function contractComponentName(id: string): string {
  if (!id.startsWith(SCHEMA_ID_PREFIX)) throw new Error(`not a contract schema id: ${id}`);
  return id
    .slice(SCHEMA_ID_PREFIX.length)
    .replace(/\.schema\.json$/, "")
    .replace(/\//g, ".");
}

/** Every `$ref` in a schema, as written. */
function refsOf(value: unknown, into: string[] = []): string[] {
  if (Array.isArray(value)) for (const item of value) refsOf(item, into);
  else if (value !== null && typeof value === "object") {
    for (const [key, item] of Object.entries(value)) {
      if (key === "$ref" && typeof item === "string") into.push(item);
      else refsOf(item, into);
    }
  }
  return into;
}

/** The event schemas and every contract schema they reach by absolute `$id`, sorted by `$id`. */
function eventSchemaClosure(files: SchemaFile[]): SchemaFile[] {
  const byId = new Map(files.map((f) => [f.id, f]));
  const seen = new Set<string>();
  const queue: string[] = [...EVENT_SCHEMA_IDS];
  while (queue.length > 0) {
    const id = queue.shift()!;
    if (seen.has(id)) continue;
    const file = byId.get(id);
    if (file === undefined) throw new Error(`the event schemas reference ${id}, which protocol/ does not hold`);
    seen.add(id);
    for (const ref of refsOf(file.json)) {
      if (ref.startsWith("#")) continue; // inside the same schema resource
      queue.push(ref.replace(/#.*$/, ""));
    }
  }
  return [...seen].sort().map((id) => byId.get(id)!);
}

/** A deep copy with every `#/$defs/Name` ref pointed at `#/components/schemas/Name`. */
function rewriteApiRefs(value: unknown): Json {
  if (Array.isArray(value)) return value.map(rewriteApiRefs);
  if (value !== null && typeof value === "object") {
    const out: JsonObject = {};
    for (const [key, item] of Object.entries(value)) {
      out[key] =
        key === "$ref" && typeof item === "string" && item.startsWith("#/$defs/")
          ? `#/components/schemas/${item.slice("#/$defs/".length)}`
          : rewriteApiRefs(item);
    }
    return out;
  }
  return value as Json;
}

const ref = (name: string): JsonObject => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: JsonObject): JsonObject => ({ "application/json": { schema } });

/** The refusals, one shared response each: the status and what it means. */
const ERROR_RESPONSES = {
  "400": ["BadRequest", "invalid_request: malformed JSON, a duplicate key, a member a closed schema does not allow."],
  "401": [
    "Unauthorized",
    "token_missing or token_invalid: no bearer token, or one that is unknown, revoked or expired.",
  ],
  "403": ["Forbidden", "scope_insufficient: the token's scope does not cover this operation."],
  "404": ["NotFound", "unknown_run: no run has this id."],
  "409": ["Conflict", "The run's state refuses it: run_ended, request_already_answered, …"],
  "413": ["PayloadTooLarge", "body_too_large: the body is over the server's cap."],
  "415": ["UnsupportedMediaType", "The body is not application/json."],
  "422": ["Unprocessable", "idempotency_key_reused: the key was used before with another body."],
  "429": ["TooManyRequests", "rate_limited: the token is over its rate; retry later."],
} as const;
type ErrorStatus = keyof typeof ERROR_RESPONSES;

function errors(...statuses: ErrorStatus[]): JsonObject {
  const out: JsonObject = {};
  for (const status of ["400", "401", "403", "429", ...statuses].sort()) {
    out[status] = { $ref: `#/components/responses/${ERROR_RESPONSES[status as ErrorStatus][0]}` };
  }
  return out;
}

const RUN_ID: JsonObject = {
  name: "runId",
  in: "path",
  required: true,
  description: "The run's id.",
  schema: { type: "string", minLength: 1, maxLength: 160 },
};
const IDEMPOTENCY_KEY: JsonObject = {
  name: "Idempotency-Key",
  in: "header",
  required: false,
  description:
    "Makes a retry safe: the same key with the same body answers 200 with what the first request created; with another body, 422 idempotency_key_reused.",
  schema: { type: "string", minLength: 1, maxLength: 200 },
};
const LIMIT: JsonObject = {
  name: "limit",
  in: "query",
  required: false,
  description: "At most this many items; the server caps it.",
  schema: { type: "integer", minimum: 1 },
};

const scope = (name: "read" | "operate" | "admin" | "worker"): Json => [{ bearer: [name] }];

function paths(): JsonObject {
  return {
    "/v1/runs": {
      post: {
        operationId: "createRun",
        summary: "Create a run",
        description:
          "Registers a run with its run.prepare, session.open and (with a prompt) first turn queued. A retry with the same Idempotency-Key returns the same run with 200.",
        security: scope("operate"),
        parameters: [IDEMPOTENCY_KEY],
        requestBody: { required: true, content: json(ref("RunSpec")) },
        responses: {
          "200": {
            description: "The run an earlier request with this Idempotency-Key created.",
            content: json(ref("Run")),
          },
          "201": { description: "The run, created.", content: json(ref("Run")) },
          ...errors("413", "415", "422"),
        },
      },
      get: {
        operationId: "listRuns",
        summary: "List runs",
        description: "Newest first, a page at a time: pass `next` back as `after` until it is null.",
        security: scope("read"),
        parameters: [
          { name: "state", in: "query", required: false, schema: ref("RunState") },
          {
            name: "label",
            in: "query",
            required: false,
            description: "`key:value`; repeat it to require several labels.",
            style: "form",
            explode: true,
            schema: { type: "array", items: { type: "string", pattern: "^[^:]+:.*$" } },
          },
          {
            name: "text",
            in: "query",
            required: false,
            description: "Runs whose id or spec contains this text.",
            schema: { type: "string" },
          },
          {
            name: "after",
            in: "query",
            required: false,
            description: "The previous page's `next` cursor.",
            schema: { type: "string" },
          },
          LIMIT,
        ],
        responses: { "200": { description: "A page of runs.", content: json(ref("RunList")) }, ...errors() },
      },
    },
    "/v1/runs/{runId}": {
      parameters: [RUN_ID],
      get: {
        operationId: "getRun",
        summary: "Read a run",
        security: scope("read"),
        parameters: [
          {
            name: "upto",
            in: "query",
            required: false,
            description: "The session, requests and failure of the run's first `upto` events (a replay's step).",
            schema: { type: "integer", minimum: 0 },
          },
        ],
        responses: { "200": { description: "The run.", content: json(ref("Run")) }, ...errors("404") },
      },
    },
    "/v1/runs/{runId}/events": {
      parameters: [RUN_ID],
      get: {
        operationId: "listEvents",
        summary: "Read or follow a run's committed events",
        description:
          "With `Accept: application/json`, a page of events after `after` (with `type` or `q`, the matching ones among a bounded scan). With `Accept: text/event-stream`, a stream: each event as `id: <seq>`, `event: prp`, `data: <the envelope JSON>`; comments as keep-alives; `event: end` after run.terminal, then the server closes. Resume with `Last-Event-ID` (or `after`): no gap, no duplicate.",
        security: scope("read"),
        parameters: [
          {
            name: "after",
            in: "query",
            required: false,
            description: "Only events with a greater seq.",
            schema: { type: "integer", minimum: 0 },
          },
          LIMIT,
          {
            name: "type",
            in: "query",
            required: false,
            description:
              "Only events of these event types: repeat it, or separate types with commas. A filtered page scans a bounded number of events: continue from its `next` until `ended` or the run's event count.",
            style: "form",
            explode: true,
            schema: { type: "array", maxItems: 32, items: { type: "string", minLength: 1, maxLength: 1024 } },
          },
          {
            name: "q",
            in: "query",
            required: false,
            description: "Only events whose envelope JSON contains this text (case-insensitive). Scans as `type` does.",
            schema: { type: "string", minLength: 1, maxLength: 256 },
          },
          {
            name: "Last-Event-ID",
            in: "header",
            required: false,
            description: "The stream's resume point: the last seq received.",
            schema: { type: "string", pattern: "^[0-9]+$" },
          },
        ],
        responses: {
          "200": {
            description: "A page of events, or the event stream.",
            content: {
              ...json(ref("EventPage")),
              "text/event-stream": {
                schema: {
                  type: "string",
                  description: "Server-sent events; each `data:` is a PrpEvent (the envelope of a CommittedEvent).",
                },
              },
            },
          },
          ...errors("404"),
        },
      },
    },
    "/v1/runs/{runId}/commands": {
      parameters: [RUN_ID],
      post: {
        operationId: "sendCommand",
        summary: "Queue a command for the run",
        security: scope("operate"),
        parameters: [IDEMPOTENCY_KEY],
        requestBody: { required: true, content: json(ref("CommandRequest")) },
        responses: {
          "200": { description: "The command an earlier request queued.", content: json(ref("CommandReceipt")) },
          "201": { description: "The command, queued.", content: json(ref("CommandReceipt")) },
          ...errors("404", "409", "413", "415", "422"),
        },
      },
    },
    "/v1/runs/{runId}/tickets": {
      parameters: [RUN_ID],
      post: {
        operationId: "createTicket",
        summary: "Issue a one-use bootstrap ticket for a runner",
        security: scope("admin"),
        requestBody: { required: false, content: json(ref("TicketRequest")) },
        responses: {
          "201": { description: "The ticket, shown once.", content: json(ref("Ticket")) },
          ...errors("404", "409", "413", "415"),
        },
      },
    },
    "/v1/runs/{runId}/cancel": {
      parameters: [RUN_ID],
      post: {
        operationId: "cancelRun",
        summary: "Cancel a run",
        description:
          "A queued run ends at once (its dispatch ends `cancelled`; no runner ever starts it). A claimed or running run gets run.cancel queued for its runner, as POST …/commands would. An ended run is refused with run_ended.",
        security: scope("operate"),
        responses: {
          "200": { description: "The run after the cancel.", content: json(ref("Run")) },
          ...errors("404", "409"),
        },
      },
    },
    "/v1/workers/poll": {
      post: {
        operationId: "pollWorker",
        summary: "A worker's heartbeat, reports and claims",
        description:
          "The worker's one call, made serially (never two at once) and at least every heartbeatMs. It authenticates with its worker credential (`prp authority worker add`), not an API token. Claims follow priority, then submit time, among the runs whose labels the worker holds and whose caps have room. A retry with the same requestId claims nothing new and hands out the same claims with new tickets.",
        security: scope("worker"),
        requestBody: { required: true, content: json(ref("WorkerPoll")) },
        responses: {
          "200": { description: "Its claims and the runs it lost.", content: json(ref("WorkerPollAnswer")) },
          ...errors("413", "415"),
        },
      },
    },
    "/v1/workers": {
      get: {
        operationId: "listWorkers",
        summary: "List workers and admission caps",
        security: scope("read"),
        responses: {
          "200": { description: "Every worker, and each cap with its use.", content: json(ref("WorkerList")) },
          ...errors(),
        },
      },
    },
    "/v1/agents": {
      get: {
        operationId: "listAgents",
        summary: "List the agents a run may name",
        description:
          "The authority's agent catalog (built in and PRP_AGENT_CATALOG), whose names a RunSpec's `{kind: profile}` takes, and the fake harness's scripts, for `{kind: fake}`.",
        security: scope("read"),
        responses: {
          "200": { description: "The profiles and the scripts.", content: json(ref("AgentList")) },
          ...errors(),
        },
      },
    },
    [OPENAPI_PATH]: {
      get: {
        operationId: "getOpenApiDocument",
        summary: "This document",
        security: [],
        responses: {
          "200": { description: "The OpenAPI 3.1 document.", content: json({ type: "object" }) },
          "429": { $ref: "#/components/responses/TooManyRequests" },
        },
      },
    },
  };
}

function components(files: SchemaFile[]): JsonObject {
  const schemas: JsonObject = {};
  const event = API_SCHEMAS.$defs.PrpEvent;
  for (const [name, schema] of Object.entries(API_SCHEMAS.$defs)) {
    schemas[name] =
      name === "PrpEvent"
        ? { title: event.title, description: event.description, oneOf: EVENT_SCHEMA_IDS.map((id) => ({ $ref: id })) }
        : rewriteApiRefs(schema);
  }
  for (const file of eventSchemaClosure(files)) {
    schemas[contractComponentName(file.id)] = JSON.parse(file.text) as Json;
  }
  const responses: JsonObject = {};
  for (const [, [name, description]] of Object.entries(ERROR_RESPONSES).sort(([a], [b]) => (a < b ? -1 : 1))) {
    responses[name] = { description, content: json(ref("Error")) };
  }
  return {
    schemas,
    responses,
    securitySchemes: {
      bearer: {
        type: "http",
        scheme: "bearer",
        description:
          "An API token (`prp authority token create --scope read|operate|admin`): read covers the GETs; operate adds creating runs, sending commands and cancelling; admin adds tickets. Or, for POST /v1/workers/poll only, a worker credential (`prp authority worker add`): scope `worker`, which covers nothing else.",
      },
    },
  };
}

/** The OpenAPI 3.1 document of the HTTP API v1. Reads protocol/ on each call. */
export function openApiDocument(files: SchemaFile[] = loadSchemaFiles()): Record<string, unknown> {
  return {
    openapi: "3.1.0",
    jsonSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
    info: {
      title: "PRP Kit authority API",
      version: "1",
      description:
        "Create runs, read and follow their committed events, and act on them. Every refusal is an Error: `{code, message, path?}`.",
    },
    security: scope("read"),
    paths: paths(),
    components: components(files),
  };
}
