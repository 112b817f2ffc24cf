import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { AUTHORITY_ID_PATTERN } from "../../src/contract/ids.js";
import { loadSchemaFiles } from "../../src/contract/schema-files.js";
import {
  CORE_TO_RUNNER_KINDS,
  HANDSHAKE_KINDS,
  IDENTITY_FIELDS,
  RUNNER_TO_CORE_KINDS,
  checkControlEnvelope,
  checkHandshakeEnvelope,
  controlEnvelope,
  handshakeEnvelope,
  type EnvelopeBinding,
  type Payload,
} from "../../src/transport/index.js";
import { IDENTITY } from "./support.js";

const NOW = Date.UTC(2026, 0, 1);
const BINDING: EnvelopeBinding = {
  identity: IDENTITY,
  connectionId: "connection_7",
  connectionLeaseId: "lease-7",
  leaseExpiresAtUnixMs: NOW + 60_000,
};
const envelope = (kind: string, payload: unknown, changes: Payload = {}) => ({
  ...controlEnvelope("ack", BINDING, {}, "envelope-1", new Date(NOW).toISOString()),
  kind,
  payload,
  ...changes,
});
const refusal = (value: unknown, sender: "core" | "runner") => {
  const r = checkControlEnvelope(value, BINDING, sender, NOW);
  return r.ok ? "ok" : `${r.error.code} ${r.error.path}`;
};

interface Def {
  pattern?: string;
  enum?: unknown[];
  const?: unknown;
  properties?: Record<string, Def>;
  allOf?: Def[];
}
const schema = (name: string) =>
  loadSchemaFiles().find((f) => f.path === `schemas/${name}`)!.json as { $defs: Record<string, Def> };

describe("the transport schemas state what the transport's code assumes", () => {
  it("identity values follow the one id pattern of src/contract/ids.ts", () => {
    assert.equal(schema("runner-handshake.schema.json").$defs.identityValue!.pattern, AUTHORITY_ID_PATTERN.source);
  });

  it("the kinds of each sender are the kinds the channels send", () => {
    const defs = schema("runner-control-envelope.schema.json").$defs;
    const kindsOf = (def: string) => {
      const kind = defs[def]!.allOf![1]!.properties!.kind!;
      return kind.enum ?? [kind.const];
    };
    assert.deepEqual(kindsOf("welcome"), ["welcome"]);
    assert.deepEqual(
      kindsOf("fromCore"),
      CORE_TO_RUNNER_KINDS.filter((k) => k !== "welcome"),
    );
    assert.deepEqual(kindsOf("fromRunner"), [...RUNNER_TO_CORE_KINDS]);
    assert.deepEqual(defs.header!.properties!.kind!.enum, [...CORE_TO_RUNNER_KINDS, ...RUNNER_TO_CORE_KINDS]);
    assert.deepEqual(schema("runner-handshake.schema.json").$defs.header!.properties!.kind!.enum, [...HANDSHAKE_KINDS]);
  });
});

describe("control envelopes are refused by their schema, with the transport's codes", () => {
  it("accept every kind with the payload it carries", () => {
    const fromCore: [string, Payload][] = [
      ["ack", { ackedSourceSeq: 0 }],
      ["command", { command: {} }],
      ["revoke", { revocationEpoch: 1 }],
      ["ping", {}],
      ["command_result_ack", { commandId: "c1" }],
    ];
    for (const [kind, payload] of fromCore) assert.equal(refusal(envelope(kind, payload), "core"), "ok", kind);
    const fromRunner: [string, Payload][] = [
      ["event", { event: {} }],
      ["command_result", { commandId: "c1", status: "completed", result: null }],
      ["pong", { lifecycle: "ready", outboxBytes: 0, ackedSourceSeq: 0 }],
    ];
    for (const [kind, payload] of fromRunner) assert.equal(refusal(envelope(kind, payload), "runner"), "ok", kind);
  });

  it("refuse a payload member of the wrong shape or missing, at its path", () => {
    assert.equal(refusal(envelope("command", []), "core"), "malformed_envelope /payload");
    assert.equal(
      refusal(envelope("command_result_ack", { commandId: "" }), "core"),
      "malformed_envelope /payload/commandId",
    );
    assert.equal(refusal(envelope("event", "e"), "runner"), "malformed_envelope /payload");
    assert.equal(
      refusal(envelope("pong", { lifecycle: "ready", outboxBytes: -1, ackedSourceSeq: 0 }), "runner"),
      "malformed_envelope /payload/outboxBytes",
    );
    assert.equal(
      refusal(envelope("pong", { lifecycle: "", outboxBytes: 0, ackedSourceSeq: 0 }), "runner"),
      "malformed_envelope /payload/lifecycle",
    );
    assert.equal(
      refusal(envelope("ack", { ackedSourceSeq: 2 ** 53 }), "core"),
      "malformed_envelope /payload/ackedSourceSeq",
    );
  });

  it("refuse what the other side sends, a second welcome and an unknown kind as unknown_kind", () => {
    assert.equal(refusal(envelope("event", { event: {} }), "core"), "unknown_kind /kind");
    assert.equal(refusal(envelope("ack", { ackedSourceSeq: 0 }), "runner"), "unknown_kind /kind");
    assert.equal(refusal(envelope("welcome", {}), "core"), "unknown_kind /kind");
    assert.equal(refusal(envelope(7 as unknown as string, {}), "core"), "unknown_kind /kind");
  });

  it("refuse identity, connection and lease values of the wrong shape as mismatches", () => {
    for (const field of IDENTITY_FIELDS)
      assert.equal(refusal(envelope("ping", {}, { [field]: 1 }), "core"), `identity_mismatch /${field}`);
    assert.equal(
      refusal(envelope("ping", {}, { connectionId: "connection_x" }), "core"),
      "connection_mismatch /connectionId",
    );
    assert.equal(refusal(envelope("ping", {}, { connectionLeaseId: "" }), "core"), "lease_mismatch /connectionLeaseId");
  });

  it("say in the message where and which rule", () => {
    const r = checkControlEnvelope(envelope("revoke", { revocationEpoch: 1.5 }), BINDING, "core", NOW);
    assert.ok(!r.ok);
    assert.equal(
      r.error.message,
      "/payload/revocationEpoch must be integer (runner-control-envelope.schema.json#/$defs/fromCore)",
    );
    const missing = checkControlEnvelope(envelope("revoke", {}), BINDING, "core", NOW);
    assert.ok(!missing.ok);
    assert.equal(
      missing.error.message,
      "/payload/revocationEpoch must be present (runner-control-envelope.schema.json#/$defs/fromCore)",
    );
  });
});

describe("handshake envelopes are refused by their schema", () => {
  const refused = (value: unknown) => {
    const r = checkHandshakeEnvelope(value, "auth_hello");
    return r.ok ? "ok" : `${r.error.code} ${r.error.path}`;
  };
  it("with the codes of protocol, version, kind and payload", () => {
    const hello = handshakeEnvelope("auth_hello", {});
    assert.equal(refused({ ...hello, extra: true }), "ok", "members beyond the four are ignored");
    assert.equal(refused({ ...hello, version: 2 }), "version_mismatch /version");
    assert.equal(refused({ ...hello, kind: "welcome" }), "unexpected_message /kind");
    assert.equal(refused({ ...hello, payload: null }), "malformed_handshake /payload");
    assert.equal(
      refused({ protocol: "paperclip.runner", version: 1, kind: "auth_hello" }),
      "malformed_handshake /payload",
    );
    assert.equal(refused("hello"), "malformed_handshake ");
  });
});
