import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  IDENTITY_FIELDS,
  checkControlEnvelope,
  checkHandshakeEnvelope,
  controlEnvelope,
  handshakeEnvelope,
  type EnvelopeBinding,
} from "../../src/transport/index.js";
import { IDENTITY } from "./support.js";

const NOW = Date.UTC(2026, 0, 1);
const BINDING: EnvelopeBinding = {
  identity: IDENTITY,
  connectionId: "connection_7",
  connectionLeaseId: "lease-7",
  leaseExpiresAtUnixMs: NOW + 60_000,
};
const ack = () =>
  controlEnvelope(
    "ack",
    BINDING,
    { ackedSourceSeq: 4 },
    "envelope-1",
    new Date(NOW).toISOString(),
  ) as unknown as Record<string, unknown>;
const refusal = (value: unknown, sender: "core" | "runner" = "core", now = NOW) => {
  const r = checkControlEnvelope(value, BINDING, sender, now);
  return r.ok ? "ok" : `${r.error.code} ${r.error.path}`;
};

describe("control envelopes", () => {
  it("carry protocol, version, the six identity fields, connectionId and connectionLeaseId", () => {
    const env = ack();
    assert.deepEqual(Object.keys(env), [
      "protocol",
      "version",
      "kind",
      "envelopeId",
      ...IDENTITY_FIELDS,
      "connectionId",
      "connectionLeaseId",
      "sentAt",
      "payload",
    ]);
    assert.equal(refusal(env), "ok");
  });

  it("refuse each of the six identity fields changed, naming the field", () => {
    for (const field of IDENTITY_FIELDS) {
      assert.equal(refusal({ ...ack(), [field]: `${IDENTITY[field]}x` }), `identity_mismatch /${field}`);
      const { [field]: _dropped, ...without } = ack();
      assert.equal(refusal(without), `identity_mismatch /${field}`);
    }
  });

  it("refuse a wrong protocol, version, connection, lease or kind", () => {
    assert.equal(refusal({ ...ack(), protocol: "paperclip.runner.v2" }), "protocol_mismatch /protocol");
    assert.equal(refusal({ ...ack(), version: 2 }), "version_mismatch /version");
    assert.equal(refusal({ ...ack(), version: "1" }), "version_mismatch /version");
    assert.equal(refusal({ ...ack(), connectionId: "connection_8" }), "connection_mismatch /connectionId");
    assert.equal(refusal({ ...ack(), connectionLeaseId: "lease-8" }), "lease_mismatch /connectionLeaseId");
    assert.equal(refusal({ ...ack(), kind: "event" }), "unknown_kind /kind", "an event never comes from the core");
    assert.equal(
      refusal({ ...ack(), kind: "lease_renew" }),
      "unknown_kind /kind",
      "a renewal request never comes from the core",
    );
    assert.equal(refusal({ ...ack(), kind: "lease_extend" }), "unknown_kind /kind");
    assert.equal(refusal(ack(), "runner"), "unknown_kind /kind");
  });

  it("refuse malformed envelopes and ack/revoke numbers", () => {
    assert.equal(refusal([]), "malformed_envelope ");
    assert.equal(refusal({ ...ack(), payload: [] }), "malformed_envelope /payload");
    assert.equal(refusal({ ...ack(), envelopeId: "" }), "malformed_envelope /envelopeId");
    assert.equal(refusal({ ...ack(), sentAt: 1 }), "malformed_envelope /sentAt");
    assert.equal(refusal({ ...ack(), payload: { ackedSourceSeq: -1 } }), "malformed_envelope /payload/ackedSourceSeq");
    assert.equal(
      refusal({ ...ack(), kind: "revoke", payload: { revocationEpoch: 1.5 } }),
      "malformed_envelope /payload/revocationEpoch",
    );
  });

  it("check the numbers of lease_renew and lease_renewed (§5.9) before anyone acts on them", () => {
    const renew = (payload: Record<string, unknown>) => ({ ...ack(), kind: "lease_renew", payload });
    const good = { currentExpiresAtUnixMs: NOW + 60_000, revocationEpoch: 2 };
    assert.equal(refusal(renew(good), "runner"), "ok");
    for (const bad of [0, -1, 1.5, "1", null])
      assert.equal(
        refusal(renew({ ...good, currentExpiresAtUnixMs: bad }), "runner"),
        "malformed_envelope /payload/currentExpiresAtUnixMs",
        String(bad),
      );
    assert.equal(
      refusal(renew({ currentExpiresAtUnixMs: NOW }), "runner"),
      "malformed_envelope /payload/revocationEpoch",
    );

    const renewed = (payload: Record<string, unknown>) => ({ ...ack(), kind: "lease_renewed", payload });
    const answer = {
      previousExpiresAtUnixMs: NOW + 60_000,
      connectionLeaseExpiresAtUnixMs: NOW + 90_000,
      connectionLeaseExpiresAt: new Date(NOW + 90_000).toISOString(),
      revocationEpoch: 2,
    };
    assert.equal(refusal(renewed(answer)), "ok");
    const { previousExpiresAtUnixMs: _dropped, ...noEcho } = answer;
    assert.equal(refusal(renewed(noEcho)), "malformed_envelope /payload/previousExpiresAtUnixMs");
    assert.equal(
      refusal(renewed({ ...answer, connectionLeaseExpiresAtUnixMs: 0 })),
      "malformed_envelope /payload/connectionLeaseExpiresAtUnixMs",
    );
    assert.equal(
      refusal(renewed({ ...answer, connectionLeaseExpiresAt: new Date(NOW + 90_001).toISOString() })),
      "malformed_envelope /payload/connectionLeaseExpiresAt",
    );
    assert.equal(refusal(renewed({ ...answer, revocationEpoch: -1 })), "malformed_envelope /payload/revocationEpoch");
  });

  it("refuse any envelope once the lease has expired", () => {
    assert.equal(refusal(ack(), "core", NOW + 59_999), "ok");
    assert.equal(refusal(ack(), "core", NOW + 60_000), "lease_expired /connectionLeaseId");
  });
});

describe("handshake envelopes", () => {
  it("are {protocol, version, kind, payload} and must be the kind expected next", () => {
    const hello = handshakeEnvelope("auth_hello", { a: 1 });
    assert.deepEqual(hello, { protocol: "paperclip.runner", version: 1, kind: "auth_hello", payload: { a: 1 } });
    assert.deepEqual(checkHandshakeEnvelope(hello, "auth_hello"), { ok: true, value: { a: 1 } });
    const wrong = checkHandshakeEnvelope(hello, "auth_response");
    assert.equal(wrong.ok ? "" : `${wrong.error.code} ${wrong.error.path}`, "unexpected_message /kind");
    const bad = checkHandshakeEnvelope({ ...hello, protocol: "x" }, "auth_hello");
    assert.equal(bad.ok ? "" : bad.error.code, "protocol_mismatch");
  });
});
