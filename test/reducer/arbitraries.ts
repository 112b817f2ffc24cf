/** fast-check generators of schema-valid event envelopes for the reducer properties. */
import fc from "fast-check";
import type { PrpEvent } from "../../src/contract/index.js";
import { loadSchemaFiles } from "../../src/contract/schema-files.js";
import { AT, result, terminal } from "../contract/samples.js";
import { codecJsonValue } from "../support/json-values.js";

type Json = Record<string, unknown>;
export interface Body {
  eventType: string;
  payload: Json;
  priority?: number;
  turnId?: string;
  itemId?: string;
}

export const RUN = "run_prop";
export const SESSION = "session_prop";

/** A v1 envelope around a body: the sequencing fields are what the properties vary. */
export function envelope(source: string, seq: number, id: string, body: Body, version: 1 | 2 | 3 = 1): PrpEvent {
  return {
    schema: `paperclip.prp.event.v${version}`,
    sourceEventId: id,
    sourceSeq: seq,
    sourceInstanceId: source,
    sourceKind: "runner",
    runId: RUN,
    normalizedSessionId: SESSION,
    ...(body.turnId ? { turnId: body.turnId } : {}),
    ...(body.itemId ? { itemId: body.itemId } : {}),
    eventType: body.eventType,
    schemaVersion: version,
    priority: body.priority ?? 1,
    emittedAt: AT,
    payload: body.payload,
  } as PrpEvent;
}

const measurement = fc.record({
  inputTokens: fc.nat(1000),
  outputTokens: fc.nat(1000),
  cacheReadTokens: fc.nat(1000),
  cacheWriteTokens: fc.nat(1000),
  activeSeconds: fc.nat(100),
  requests: fc.option(fc.nat(10)),
  providerCostUsd: fc.option(fc.nat(100).map((c) => c / 100)),
});

const planPayload = (prefix: string) =>
  fc.record({
    schema: fc.constant("paperclip.plan.updated.v1"),
    planId: fc.constant(`${prefix}plan`),
    revision: fc.integer({ min: 1, max: 5 }),
    steps: fc.array(
      fc.record({
        stepId: fc.constantFrom("s1", "s2"),
        body: fc.constant("step"),
        status: fc.constantFrom("pending", "in_progress", "completed", "blocked"),
      }),
      { maxLength: 2 },
    ),
    complete: fc.boolean(),
    syncStatus: fc.constant("not_applicable"),
  });
const toolPayload = (prefix: string) =>
  fc.record({
    schema: fc.constant("paperclip.tool.execution.v1"),
    executionId: fc.constant(`${prefix}exec`),
    transport: fc.constant("process"),
    operation: fc.constant("execute"),
    status: fc.constantFrom("running", "completed", "failed"),
    output: fc.option(fc.string({ maxLength: 8 })),
    outputBytes: fc.nat(100),
    outputTruncated: fc.boolean(),
    outputDigest: fc.constant(null),
  });
const credentialPayload = (prefix: string) =>
  fc.record({
    schema: fc.constant("paperclip.auth.credentials.updated.v1"),
    provider: fc.constant("codex"),
    bindingId: fc.constant(`${prefix}binding`),
    revision: fc.integer({ min: 1, max: 5 }),
    detection: fc.constantFrom("credential_store", "native_hook"),
  });

/**
 * Bodies for every state the reducer projects. Ids of items, requests, plans and executions
 * carry `prefix`, so that two sources given different prefixes touch disjoint state.
 */
export function projectingBody(prefix: string): fc.Arbitrary<Body> {
  const itemId = fc.constantFrom(`${prefix}item_a`, `${prefix}item_b`);
  const requestId = fc.constantFrom(`${prefix}request_a`, `${prefix}request_b`);
  return fc.oneof(
    fc.record({
      eventType: fc.constantFrom(
        "session.started",
        "session.resumed",
        "session.closed",
        "session.failed",
        "turn.completed",
        "turn.failed",
        "turn.interrupted",
        "turn.cancelled",
      ),
      payload: fc.constant({}),
    }),
    fc.record({
      eventType: fc.constant("turn.started"),
      payload: fc.constant({}),
      turnId: fc.constantFrom("turn_1", "turn_2"),
    }),
    fc.record({
      eventType: fc.constant("runtime.phase.changed"),
      payload: fc.record({ phase: fc.constantFrom("workspace_preparing", "harness_starting", "running") }),
    }),
    fc.record({
      eventType: fc.constantFrom("item.started", "item.delta", "item.completed", "item.failed"),
      itemId,
      payload: fc.record(
        {
          kind: fc.constantFrom("assistant_message", "command"),
          text: fc.string({ maxLength: 8 }),
          message: fc.string({ maxLength: 8 }),
        },
        { requiredKeys: [] },
      ),
    }),
    fc.record({
      eventType: fc.constant("runtime_request.created"),
      payload: fc.record({
        request: fc.record({
          schema: fc.constant("paperclip.runtime_request.v1"),
          requestKind: fc.constant("runtime"),
          requestId,
          type: fc.constantFrom("permission", "input"),
          status: fc.constant("pending"),
          prompt: fc.constantFrom("Allow?", "Which one?"),
        }),
      }),
    }),
    fc.record({
      eventType: fc.constantFrom("runtime_request.resolved", "runtime_request.expired", "runtime_request.cancelled"),
      payload: fc.record({ requestId }),
    }),
    fc.constant({ eventType: "run.result.proposed", payload: result(), priority: 0 }),
    fc.constant({ eventType: "run.terminal", payload: terminal(), priority: 0 }),
    fc.record({
      eventType: fc.constant("usage.reported"),
      payload: fc.record({
        provider: fc.constant("codex"),
        model: fc.constant("m"),
        cumulative: measurement,
        runDelta: fc.option(measurement),
        runDeltaAvailable: fc.boolean(),
      }),
    }),
    fc.record({ eventType: fc.constant("plan.updated"), payload: planPayload(prefix) }),
    fc.record({
      eventType: fc.constantFrom("tool.execution.started", "tool.execution.progressed", "tool.execution.completed"),
      payload: toolPayload(prefix),
    }),
    fc.record({
      eventType: fc.constant("auth.credentials.updated"),
      priority: fc.constant(0),
      payload: credentialPayload(prefix),
    }),
    fc.record({
      eventType: fc.constant("runtime.activity.recorded"),
      payload: fc.record({ namespace: fc.constant("paperclip.test"), activityKey: fc.constantFrom("a", "b") }),
    }),
  ) as fc.Arbitrary<Body>;
}

/**
 * A source's deliveries: a sequence of seqs in any order, with repeats. A seq always comes with
 * the same id and body, so a repeat is a byte-identical duplicate.
 */
export function sourceDeliveries(source: string, prefix = ""): fc.Arbitrary<PrpEvent[]> {
  return fc
    .record({
      bodies: fc.array(projectingBody(prefix), { minLength: 12, maxLength: 12 }),
      seqs: fc.array(fc.integer({ min: 1, max: 12 }), { maxLength: 16 }),
    })
    .map(({ bodies, seqs }) => seqs.map((seq) => envelope(source, seq, `${source}_event_${seq}`, bodies[seq - 1]!)));
}

/** A contiguous stream 1..n from one source. */
export const contiguousStream = (source: string, minLength = 1): fc.Arbitrary<PrpEvent[]> =>
  fc
    .array(projectingBody(""), { minLength, maxLength: 16 })
    .map((bodies) => bodies.map((b, i) => envelope(source, i + 1, `${source}_event_${i + 1}`, b)));

/** The two inputs, merged in an arbitrary order that keeps each one's own order. */
export function interleavings<T>(a: T[], b: T[]): fc.Arbitrary<T[]> {
  return fc.array(fc.boolean(), { minLength: a.length + b.length, maxLength: a.length + b.length }).map((picks) => {
    const out: T[] = [];
    let i = 0;
    let j = 0;
    for (const pickA of picks) out.push((pickA && i < a.length) || j >= b.length ? a[i++]! : b[j++]!);
    return out;
  });
}

// Open payload keys the reducer reads, filled with any JSON: an unbound payload may hold anything.
const READ_KEYS = [
  "text",
  "kind",
  "message",
  "code",
  "phase",
  "summary",
  "request",
  "requestId",
  "goal",
  "planId",
  "executionId",
  "provider",
  "model",
  "cumulative",
  "runDelta",
  "runDeltaAvailable",
  "runTerminalState",
  "namespace",
  "activityKey",
  "bindingId",
  "revision",
];
const fuzzPayload = fc.dictionary(fc.constantFrom(...READ_KEYS), codecJsonValue({ maxDepth: 2 }), { maxKeys: 5 });

const goal = fc.option(
  fc.record({
    objective: fc.constant("Keep it green."),
    status: fc.constantFrom("active", "paused", "completed"),
    workingNow: fc.boolean(),
    tokenBudget: fc.option(fc.integer({ min: 1, max: 1000 })),
  }),
);
/** Valid payloads for the bound types the reducer projects; other bound types are left out. */
const BOUND_TEMPLATES: Record<string, fc.Arbitrary<Json>> = {
  "run.terminal": fc.constant(terminal()),
  "run.result.proposed": fc.constant(result()),
  "auth.credentials.updated": credentialPayload(""),
  "runtime.activity.recorded": fc.record({ namespace: fc.constant("ns"), activityKey: fc.constant("key") }),
  "plan.updated": planPayload(""),
  "tool.execution.started": toolPayload(""),
  "tool.execution.progressed": toolPayload(""),
  "tool.execution.completed": toolPayload(""),
  "session.goal.snapshot": fc.record({ goal }),
  "session.goal.updated": fc.record({ goal }),
  "session.capabilities.updated": fc.record({
    sessionGoals: fc.record({ availability: fc.constant("available"), actions: fc.constant(["get", "set"]) }),
  }),
};

interface EventSchema {
  properties: { eventType: { enum: string[] } };
  allOf: Array<{ if: { properties: { eventType: { const?: string; enum?: string[] } } } }>;
}

/** Any body of a given version: any event type, payload fuzzed where unbound, valid where bound. */
function anyBody(version: 1 | 2 | 3): fc.Arbitrary<Body> {
  const schema = loadSchemaFiles().find(
    (f) => f.id === `https://paperclip.dev/schemas/prp/v${version}/event.schema.json`,
  )!.json as unknown as EventSchema;
  const bound = new Set(
    schema.allOf.flatMap((b) => b.if.properties.eventType.enum ?? [b.if.properties.eventType.const!]),
  );
  const types = schema.properties.eventType.enum.filter((t) => !bound.has(t) || BOUND_TEMPLATES[t]);
  return fc.constantFrom(...types).chain((eventType) =>
    fc.record({
      eventType: fc.constant(eventType),
      payload: bound.has(eventType) ? BOUND_TEMPLATES[eventType]! : fuzzPayload,
      priority: fc.constant(eventType === "auth.credentials.updated" ? 0 : 1),
      turnId: fc.option(fc.constantFrom("turn_1", "turn_2"), { nil: undefined }),
      itemId: fc.option(fc.constantFrom("item_a", "item_b"), { nil: undefined }),
    }),
  ) as fc.Arbitrary<Body>;
}
const BODIES = { 1: anyBody(1), 2: anyBody(2), 3: anyBody(3) };

/**
 * Any schema-valid event of any version, from a few sources and a small id pool (so ids repeat,
 * sometimes with other content), at any seq up to 2^53 - 1.
 */
export const anyEvent: fc.Arbitrary<PrpEvent> = fc
  .record({
    version: fc.constantFrom(1, 2, 3) as fc.Arbitrary<1 | 2 | 3>,
    source: fc.constantFrom("runner_a", "runner_b"),
    seq: fc.oneof(fc.integer({ min: 1, max: 20 }), fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER })),
    id: fc.integer({ min: 1, max: 30 }).map((n) => `event_${n}`),
  })
  .chain(({ version, source, seq, id }) => BODIES[version].map((body) => envelope(source, seq, id, body, version)));
