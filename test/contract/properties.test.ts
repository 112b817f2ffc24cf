import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { decode } from "../../src/contract/index.js";
import { loadSchemaFiles } from "../../src/contract/schema-files.js";
import { result, terminal } from "./samples.js";
import { codecJsonValue } from "../support/json-values.js";
import { seeded } from "../support/seed.js";

type Json = Record<string, unknown>;
const files = loadSchemaFiles();
const schemaOf = (id: string) =>
  files.find((f) => f.id === id)!.json as {
    properties: Record<string, { enum?: string[] }>;
    required: string[];
    allOf: Array<{ if: { properties: Record<string, { const?: string; enum?: string[] }> } }>;
  };
const boundBy = (s: ReturnType<typeof schemaOf>, field: string) =>
  new Set(
    s.allOf.flatMap((b) => {
      const c = b.if.properties[field]!;
      return c.enum ?? [c.const!];
    }),
  );
const V = (v: number) => `https://paperclip.dev/schemas/prp/v${v}`;

const id = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,30}$/);
const timestamp = fc
  .integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2099, 11, 31) })
  .map((ms) => new Date(ms).toISOString());
/** Unknown optional fields: names no schema declares. */
const unknownFields = fc.dictionary(fc.stringMatching(/^future[A-Z][a-zA-Z]{0,10}$/), codecJsonValue({ maxDepth: 2 }), {
  maxKeys: 3,
});
const openPayload = fc.dictionary(fc.stringMatching(/^x[a-zA-Z]{0,8}$/), codecJsonValue({ maxDepth: 3 }), {
  maxKeys: 4,
});

/** Bound types whose payload the generator can fill, with the priority their binding requires. */
const BOUND_EVENTS: Record<string, { payload: Json; priority?: number; needsSession?: boolean }> = {
  "run.terminal": { payload: terminal() },
  "run.result.proposed": { payload: result() },
  "auth.credentials.updated": {
    payload: {
      schema: "paperclip.auth.credentials.updated.v1",
      provider: "codex",
      bindingId: "harness-auth",
      revision: 3,
      detection: "credential_store",
    },
    priority: 0,
    needsSession: true,
  },
  "runtime.activity.recorded": { payload: { namespace: "paperclip.test", activityKey: "tests.passed" }, priority: 1 },
};

function eventArb(version: 1 | 2 | 3): fc.Arbitrary<Json> {
  const schema = schemaOf(`${V(version)}/event.schema.json`);
  const bound = boundBy(schema, "eventType");
  const types = schema.properties.eventType!.enum!;
  const unbound = types.filter((t) => !bound.has(t));
  const body = fc.oneof(
    fc.record({ eventType: fc.constantFrom(...unbound), payload: openPayload, priority: fc.constantFrom(0, 1, 2) }),
    fc.constantFrom(...Object.keys(BOUND_EVENTS)).chain((t) => {
      const b = BOUND_EVENTS[t]!;
      return fc.constant({ eventType: t, payload: b.payload, priority: b.priority ?? 0 });
    }),
  );
  return fc
    .record({
      head: fc.record({
        sourceEventId: id,
        sourceSeq: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
        sourceInstanceId: id,
        sourceKind: fc.constantFrom("runner", "control_plane"),
        runId: id,
        normalizedSessionId: id,
        emittedAt: timestamp,
      }),
      optional: fc.record({ turnId: id, itemId: id, observedAt: timestamp, debug: openPayload }, { requiredKeys: [] }),
      body,
      extra: unknownFields,
    })
    .map(({ head, optional, body, extra }) => ({
      schema: `paperclip.prp.event.v${version}`,
      ...head,
      schemaVersion: version,
      ...optional,
      ...body,
      ...extra,
    }));
}

function commandArb(version: 1 | 2 | 3): fc.Arbitrary<Json> {
  const schema = schemaOf(`${V(version)}/command.schema.json`);
  const bound = boundBy(schema, "type");
  const types = schema.properties.type!.enum!.filter((t) => !bound.has(t));
  const payload = fc.oneof(
    fc.record({ type: fc.constantFrom(...types), payload: openPayload }),
    fc.record({
      type: fc.constant("run.prepare"),
      payload: fc.record({ observeCredentials: fc.boolean(), workspace: fc.constant("fixture") }, { requiredKeys: [] }),
    }),
  );
  return fc
    .record({
      commandId: id,
      controllerSeq: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
      issuedAt: timestamp,
      body: payload,
      optional: fc.record(
        {
          deadlineAt: timestamp,
          precondition: fc.record({ runnerState: fc.array(id), activeTurnId: fc.option(id) }, { requiredKeys: [] }),
        },
        { requiredKeys: [] },
      ),
      extra: unknownFields,
    })
    .map(({ body, optional, extra, ...head }) => ({
      schema: `paperclip.prp.command.v${version}`,
      ...head,
      ...body,
      ...optional,
      ...extra,
    }));
}

const codeFor = (field: string) => (field === "schema" ? "unsupported_required_schema" : "schema_validation");

for (const version of [1, 2, 3] as const) {
  for (const [kind, arb] of [
    ["event", eventArb(version)],
    ["command", commandArb(version)],
  ] as const) {
    describe(`${kind} v${version} properties`, () => {
      const required = schemaOf(`${V(version)}/${kind}.schema.json`).required;

      it("a valid document decodes and re-encodes to the same bytes, unknown optional fields included", () => {
        fc.assert(
          fc.property(arb, (doc) => {
            const text = JSON.stringify(doc);
            const d = decode(text);
            assert.ok(d.ok, d.ok ? "" : `${d.error.code} ${d.error.path} ${d.error.message}\n${text}`);
            assert.equal(d.kind, kind);
            assert.equal(d.version, version);
            assert.equal(JSON.stringify(d.value), text);
          }),
          seeded("a valid document decodes and re-encodes to the same bytes…", 150),
        );
      });

      it("removing any required field gives the documented code", () => {
        fc.assert(
          fc.property(arb, fc.constantFrom(...required), (doc, field) => {
            const { [field]: _removed, ...rest } = doc;
            const d = decode(JSON.stringify(rest));
            assert.equal(d.ok, false);
            assert.equal(d.ok ? "" : d.error.code, codeFor(field), `without ${field}`);
          }),
          seeded("removing any required field gives the documented code", 100),
        );
      });

      it("changing a const gives the documented code", () => {
        fc.assert(
          fc.property(arb, fc.integer({ min: -5, max: 20 }), (doc, n) => {
            const wrongSchema = decode(JSON.stringify({ ...doc, schema: `paperclip.prp.${kind}.v${version + 3}` }));
            assert.equal(wrongSchema.ok ? "" : wrongSchema.error.code, "unsupported_required_schema");
            if (kind !== "event" || n === version) return;
            const d = decode(JSON.stringify({ ...doc, schemaVersion: n }));
            assert.equal(
              d.ok ? "" : d.error.code,
              [1, 2, 3].includes(n) ? "schema_validation" : "unsupported_required_version",
              `schemaVersion ${n}`,
            );
          }),
          seeded("changing a const gives the documented code", 100),
        );
      });
    });
  }
}
