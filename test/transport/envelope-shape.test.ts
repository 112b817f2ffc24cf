import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import fc from "fast-check";
import { protocolDir } from "../../src/contract/package-root.js";
import { loadSchemaFiles } from "../../src/contract/schema-files.js";
import { firstViolation } from "../../src/contract/validators.js";
import { VALIDATOR_REFS } from "../../src/contract/validator-names.js";
import {
  meetsEnvelopeShape,
  PAYLOAD_SCHEMAS,
  SENDER_KINDS,
  SENDER_SCHEMAS,
  type EnvelopeSender,
} from "../../src/transport/envelope.js";
import { seeded } from "../support/seed.js";

/**
 * A control envelope is checked as its header and its own kind's payload when it is valid; the
 * sender's schema (an if/then for every kind) is the reference. Both must give the same verdict
 * on every envelope, valid or not.
 */
const FILE = "runner-control-envelope.schema.json";
const schema = loadSchemaFiles().find((f) => f.path.endsWith(`/${FILE}`))!.json as {
  $id: string;
  $defs: Record<string, { allOf?: Array<Record<string, any>> }>;
};
const SENDERS = Object.keys(SENDER_SCHEMAS) as EnvelopeSender[];
const KINDS = Object.keys(PAYLOAD_SCHEMAS);
const reference = (value: unknown, sender: EnvelopeSender) => firstViolation(SENDER_SCHEMAS[sender], value) === null;

const fixtureDir = join(protocolDir(), "fixtures/schemas/runner-control-envelope");
const fixtures = readdirSync(fixtureDir)
  .sort()
  .map((name) => ({
    name,
    value: JSON.parse(readFileSync(join(fixtureDir, name), "utf8")) as Record<string, unknown>,
  }));

/** `ref` resolved against the schema file, as the generated validators name it. */
const absolute = (ref: string) => (ref.startsWith("#") ? `${schema.$id}${ref}` : ref);

describe("control envelope shapes", () => {
  it("take each kind's payload rule and each sender's kinds from the schema", () => {
    const byKind = Object.fromEntries(
      schema.$defs.payloadByKind!.allOf!.map((branch) => [
        branch.if.properties.kind.const as string,
        absolute(branch.then.properties.payload.$ref as string),
      ]),
    );
    assert.deepEqual(
      Object.fromEntries(Object.entries(PAYLOAD_SCHEMAS).map(([kind, name]) => [kind, VALIDATOR_REFS[name]])),
      byKind,
    );
    const senderKinds = (def: string): string[] => {
      const rule = schema.$defs[def]!.allOf![1]!.properties.kind as { enum?: string[]; const?: string };
      return rule.enum ?? [rule.const!];
    };
    assert.deepEqual([...SENDER_KINDS.welcome], senderKinds("welcome"));
    assert.deepEqual([...SENDER_KINDS.core].sort(), senderKinds("fromCore").sort());
    assert.deepEqual([...SENDER_KINDS.runner].sort(), senderKinds("fromRunner").sort());
  });

  it("give the sender's schema's verdict on every fixture, from every sender", () => {
    let accepted = 0;
    for (const { name, value } of fixtures)
      for (const sender of SENDERS) {
        const verdict = meetsEnvelopeShape(value, sender);
        assert.equal(verdict, reference(value, sender), `${name} from ${sender}`);
        if (verdict) accepted++;
      }
    assert.ok(accepted >= 11, `every kind is accepted from its sender (${accepted})`);
  });

  it("give the sender's schema's verdict on mutated envelopes", () => {
    const member = fc.constantFrom(...Object.keys(fixtures[0]!.value));
    const mutation = fc.oneof(
      fc.record({ op: fc.constant("kind" as const), kind: fc.oneof(fc.constantFrom(...KINDS), fc.string()) }),
      fc.record({ op: fc.constant("drop" as const), member }),
      fc.record({ op: fc.constant("set" as const), member, to: fc.jsonValue({ maxDepth: 2 }) }),
      fc.record({ op: fc.constant("payload" as const), from: fc.nat(fixtures.length - 1) }),
      fc.record({
        op: fc.constant("payload member" as const),
        key: fc.string({ maxLength: 30 }),
        to: fc.jsonValue({ maxDepth: 2 }),
      }),
    );
    type Mutation = typeof mutation extends fc.Arbitrary<infer T> ? T : never;
    const mutate = (envelope: Record<string, unknown>, m: Mutation) => {
      const out: Record<string, unknown> = structuredClone(envelope);
      if (m.op === "kind") out.kind = m.kind;
      else if (m.op === "drop") delete out[m.member];
      else if (m.op === "set") out[m.member] = m.to;
      else if (m.op === "payload") out.payload = structuredClone(fixtures[m.from]!.value.payload);
      else if (typeof out.payload === "object" && out.payload !== null && !Array.isArray(out.payload))
        (out.payload as Record<string, unknown>)[m.key] = m.to;
      return out;
    };
    let agreedValid = 0;
    fc.assert(
      fc.property(
        fc.nat(fixtures.length - 1),
        fc.array(mutation, { minLength: 1, maxLength: 3 }),
        fc.constantFrom(...SENDERS),
        (at, mutations, sender) => {
          const value = mutations.reduce(mutate, fixtures[at]!.value);
          const verdict = meetsEnvelopeShape(value, sender);
          assert.equal(verdict, reference(value, sender), JSON.stringify(value));
          if (verdict) agreedValid++;
        },
      ),
      seeded("envelope shape by kind", 3000),
    );
    assert.ok(agreedValid > 50, `some mutations stay valid, so both verdicts are exercised (${agreedValid})`);
  });
});
