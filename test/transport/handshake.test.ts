import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  IDENTITY_FIELDS,
  RunnerHandshake,
  ServerHandshake,
  authKey,
  authKeyDigest,
  controlEnvelope,
  credentialId,
  parseHello,
  type CredentialRecord,
  type LeaseGrant,
  type Payload,
  type Result,
  type RunnerCredential,
} from "../../src/transport/index.js";
import { EXPECTED, IDENTITY, RESUME } from "./support.js";

const NOW = Date.UTC(2026, 0, 1);
const BOOTSTRAP: RunnerCredential = { kind: "bootstrap", token: "bootstrap_test-token" };
const LEASE: RunnerCredential = {
  kind: "lease",
  token: "lease_test-token",
  leaseId: "lease-1",
  expiresAtUnixMs: NOW + 60_000,
  revocationEpoch: 2,
  protocolVersion: 2,
};

function recordFor(credential: RunnerCredential, changes: Partial<CredentialRecord> = {}): CredentialRecord {
  const key = authKey(credential.token);
  const base: CredentialRecord =
    credential.kind === "bootstrap"
      ? {
          credentialId: credentialId(credential.token),
          kind: "bootstrap",
          authKeyDigest: authKeyDigest(key),
          identity: IDENTITY,
          expiresAtUnixMs: NOW + 5_000,
          used: false,
          revoked: false,
          leaseId: null,
          revocationEpoch: 0,
          protocolVersion: null,
        }
      : {
          credentialId: credentialId(credential.token),
          kind: "lease",
          authKeyDigest: authKeyDigest(key),
          identity: IDENTITY,
          expiresAtUnixMs: credential.expiresAtUnixMs,
          used: false,
          revoked: false,
          leaseId: credential.leaseId,
          revocationEpoch: credential.revocationEpoch,
          protocolVersion: credential.protocolVersion,
        };
  key.fill(0);
  return { ...base, ...changes };
}

const runnerFor = (credential: RunnerCredential, range = EXPECTED.range) =>
  new RunnerHandshake({
    credential,
    identity: IDENTITY,
    runnerVersion: EXPECTED.runnerVersion,
    runnerDigest: EXPECTED.runnerDigest,
    resume: RESUME,
    range,
  });

function helloOf(runner: RunnerHandshake, changes: Payload = {}) {
  const hello = parseHello({ ...runner.hello, ...changes });
  assert.ok(hello.ok);
  return hello.value;
}

const value = <T>(r: Result<T>): T => {
  assert.ok(r.ok, r.ok ? "" : `${r.error.code} ${r.error.path}: ${r.error.message}`);
  return r.value;
};
const refusal = (r: Result<unknown>): string => (r.ok ? "ok" : `${r.error.code} ${r.error.path}`);

function challengeFor(credential: RunnerCredential, record = recordFor(credential)) {
  const runner = runnerFor(credential);
  const server = value(ServerHandshake.challenge(helloOf(runner), record, EXPECTED, NOW));
  return { runner, server };
}

const grantFor = (credential: RunnerCredential): LeaseGrant =>
  credential.kind === "bootstrap"
    ? {
        connectionId: "connection_1",
        connectionLeaseId: "lease-9",
        connectionLeaseToken: "lease_minted",
        connectionLeaseExpiresAtUnixMs: NOW + 60_000,
        connectionLeaseRevocationEpoch: 0,
        ackedSourceSeq: 0,
        pendingCommands: [],
      }
    : {
        connectionId: "connection_2",
        connectionLeaseId: credential.leaseId,
        connectionLeaseToken: null,
        connectionLeaseExpiresAtUnixMs: credential.expiresAtUnixMs,
        connectionLeaseRevocationEpoch: credential.revocationEpoch,
        ackedSourceSeq: 5,
        pendingCommands: [],
      };

function welcomeEnvelope(
  server: ServerHandshake,
  grant: LeaseGrant,
  changes: Payload = {},
  envelopeChanges: Payload = {},
): unknown {
  const binding = {
    identity: IDENTITY,
    connectionId: grant.connectionId,
    connectionLeaseId: grant.connectionLeaseId,
    leaseExpiresAtUnixMs: grant.connectionLeaseExpiresAtUnixMs,
  };
  return {
    ...controlEnvelope(
      "welcome",
      binding,
      { ...server.welcome(grant), ...changes },
      "envelope-1",
      new Date(NOW).toISOString(),
    ),
    ...envelopeChanges,
  };
}

describe("handshake", () => {
  for (const credential of [BOOTSTRAP, LEASE]) {
    it(`${credential.kind}: both sides derive the same keys and the runner accepts the welcome`, () => {
      const { runner, server } = challengeFor(credential);
      assert.equal(server.challenge.selectedVersion, credential.kind === "lease" ? 2 : 3, "a lease keeps its version");
      assert.equal(server.challenge.credentialLeaseId, credential.kind === "lease" ? "lease-1" : null);
      const answered = value(runner.answer({ ...server.challenge }, NOW));
      const verified = value(server.verify({ ...answered.response }, NOW));
      assert.equal(verified.keys.sessionId, answered.keys.sessionId);
      assert.ok(verified.keys.clientToCore.equals(answered.keys.clientToCore));
      assert.ok(verified.keys.coreToClient.equals(answered.keys.coreToClient));
      assert.ok(!verified.keys.clientToCore.equals(verified.keys.coreToClient));
      const grant = grantFor(credential);
      const welcome = value(runner.acceptWelcome(welcomeEnvelope(server, grant), NOW));
      assert.equal(welcome.binding.connectionId, grant.connectionId);
      assert.equal(welcome.payload.heartbeatIntervalMs, 30_000, "the default interval");
      assert.equal(welcome.payload.connectionLeaseRenewalVersion, 1, "the authority offers lease renewal (§5.9)");
      assert.equal(welcome.payload.maxBatchEvents, 100);
      assert.equal(welcome.payload.maxFrameBytes, 1_048_576);
      assert.equal(welcome.lease.token, credential.kind === "bootstrap" ? "lease_minted" : credential.token);
      assert.equal(welcome.payload.leaseBinding, credentialId(welcome.lease.token));
      assert.equal("connectionLeaseToken" in welcome.payload, credential.kind === "bootstrap");
    });
  }

  it("hello carries the credential id, never the token, and 32 random nonce bytes", () => {
    const a = runnerFor(BOOTSTRAP).hello;
    const b = runnerFor(BOOTSTRAP).hello;
    assert.equal(a.credentialId, credentialId(BOOTSTRAP.token));
    assert.ok(!JSON.stringify(a).includes(BOOTSTRAP.token));
    assert.match(a.clientNonce, /^[0-9a-f]{64}$/);
    assert.notEqual(a.clientNonce, b.clientNonce);
  });

  describe("the server refuses the hello", () => {
    const hello = helloOf(runnerFor(BOOTSTRAP));
    const challenge = (record: CredentialRecord | undefined, h = hello) =>
      refusal(ServerHandshake.challenge(h, record, EXPECTED, NOW));
    it("for a credential that is unknown, used, revoked, expired or of the other kind", () => {
      assert.equal(challenge(undefined), "unknown_credential /payload/credentialId");
      assert.equal(challenge(recordFor(BOOTSTRAP, { used: true })), "credential_used /payload/credentialId");
      assert.equal(challenge(recordFor(BOOTSTRAP, { revoked: true })), "credential_revoked /payload/credentialId");
      assert.equal(
        challenge(recordFor(BOOTSTRAP, { expiresAtUnixMs: NOW })),
        "credential_expired /payload/credentialId",
      );
      assert.equal(
        challenge(recordFor(BOOTSTRAP, { kind: "lease" })),
        "credential_kind_mismatch /payload/credentialKind",
      );
      assert.equal(
        challenge(recordFor(BOOTSTRAP, { authKeyDigest: "sha256:xyz" })),
        "unauthorized /payload/credentialId",
      );
    });
    it("for a credential of another run", () => {
      assert.equal(
        challenge(recordFor(BOOTSTRAP, { identity: { ...IDENTITY, runId: "run-2" } })),
        "identity_mismatch /payload/runId",
      );
    });
    it("for any identity field, the runner build or the protocol range not as expected", () => {
      for (const field of IDENTITY_FIELDS)
        assert.equal(
          challenge(recordFor(BOOTSTRAP), { ...hello, [field]: "other" }),
          `identity_mismatch /payload/${field}`,
        );
      assert.equal(
        challenge(recordFor(BOOTSTRAP), { ...hello, runnerVersion: "0.2.0" }),
        "runner_mismatch /payload/runnerVersion",
      );
      assert.equal(
        challenge(recordFor(BOOTSTRAP), { ...hello, runnerDigest: `sha256:${"00".repeat(32)}` }),
        "runner_mismatch /payload/runnerDigest",
      );
      assert.equal(
        challenge(recordFor(BOOTSTRAP), { ...hello, protocolMax: 2 }),
        "version_mismatch /payload/protocolMin",
      );
    });
    it("for a lease whose protocol version is outside the common range", () => {
      const leaseHello = helloOf(runnerFor(LEASE));
      assert.equal(
        refusal(ServerHandshake.challenge(leaseHello, recordFor(LEASE, { protocolVersion: 4 }), EXPECTED, NOW)),
        "version_mismatch /payload/protocolMax",
      );
    });
    it("and parseHello refuses malformed payloads by member", () => {
      const good = { ...runnerFor(BOOTSTRAP).hello };
      assert.equal(refusal(parseHello({ ...good, clientNonce: "ab" })), "malformed_handshake /payload/clientNonce");
      assert.equal(
        refusal(parseHello({ ...good, credentialKind: "ticket" })),
        "malformed_handshake /payload/credentialKind",
      );
      assert.equal(refusal(parseHello({ ...good, runId: "bad id" })), "malformed_handshake /payload/runId");
      assert.equal(
        refusal(parseHello({ ...good, resume: { ...RESUME, ackedSourceSeq: -1 } })),
        "malformed_handshake /payload/resume/ackedSourceSeq",
      );
      assert.equal(
        refusal(parseHello({ ...good, protocolMin: 3, protocolMax: 1 })),
        "malformed_handshake /payload/protocolMin",
      );
      assert.equal(
        refusal(parseHello({ ...good, runnerVersion: "v".repeat(241) })),
        "malformed_handshake /payload/runnerVersion",
      );
      assert.equal(refusal(parseHello({ ...good, protocolMax: 2.5 })), "malformed_handshake /payload/protocolMax");
      assert.equal(refusal(parseHello({ ...good, resume: [] })), "malformed_handshake /payload/resume");
      const { itemId: _dropped, ...noItem } = good;
      assert.equal(refusal(parseHello(noItem)), "malformed_handshake /payload/itemId");
    });
  });

  describe("the runner refuses the challenge", () => {
    const answer = (credential: RunnerCredential, changes: Payload, now = NOW) => {
      const { runner, server } = challengeFor(credential);
      return refusal(runner.answer({ ...server.challenge, ...changes }, now));
    };
    it("when an echoed field is not its own", () => {
      for (const field of [...IDENTITY_FIELDS, "clientNonce"]) {
        assert.equal(
          answer(BOOTSTRAP, { [field]: field === "clientNonce" ? "00".repeat(32) : "other" }),
          `echo_mismatch /payload/${field}`,
        );
      }
      assert.equal(answer(BOOTSTRAP, { credentialId: credentialId("another") }), "echo_mismatch /payload/credentialId");
      assert.equal(answer(BOOTSTRAP, { credentialKind: "lease" }), "echo_mismatch /payload/credentialKind");
    });
    it("when the server proof is wrong, or any signed member was changed", () => {
      const { runner, server } = challengeFor(BOOTSTRAP);
      const proof = server.challenge.serverProof;
      assert.equal(
        refusal(
          runner.answer({ ...server.challenge, serverProof: (proof[0] === "0" ? "1" : "0") + proof.slice(1) }, NOW),
        ),
        "proof_mismatch /payload/serverProof",
      );
      assert.equal(
        answer(BOOTSTRAP, { serverNonce: "00000000-0000-4000-8000-000000000000" }),
        "proof_mismatch /payload/serverProof",
      );
      assert.equal(answer(BOOTSTRAP, { selectedVersion: 2 }), "proof_mismatch /payload/serverProof");
    });
    it("when the version is unsupported or the credential expired", () => {
      assert.equal(answer(BOOTSTRAP, { selectedVersion: 4 }), "version_mismatch /payload/selectedVersion");
      assert.equal(answer(BOOTSTRAP, {}, NOW + 5_000), "credential_expired /payload/credentialExpiresAtUnixMs");
      assert.equal(
        answer(BOOTSTRAP, { credentialExpiresAt: "2030-01-01T00:00:00.000Z" }),
        "malformed_handshake /payload/credentialExpiresAt",
      );
      assert.equal(
        answer(BOOTSTRAP, { serverNonce: "00000000-0000-4000-8000-00000000000A" }),
        "malformed_handshake /payload/serverNonce",
      );
      assert.equal(answer(BOOTSTRAP, { revocationEpoch: 0.5 }), "malformed_handshake /payload/revocationEpoch");
      assert.equal(
        answer(BOOTSTRAP, { credentialLeaseId: "bad id" }),
        "malformed_handshake /payload/credentialLeaseId",
      );
    });
    it("when lease id, expiry, epoch or version differ from the lease it holds", () => {
      assert.equal(answer(LEASE, { credentialLeaseId: "lease-2" }), "lease_mismatch /payload/credentialLeaseId");
      const later = NOW + 61_000;
      assert.equal(
        answer(LEASE, { credentialExpiresAtUnixMs: later, credentialExpiresAt: new Date(later).toISOString() }),
        "lease_mismatch /payload/credentialExpiresAtUnixMs",
      );
      assert.equal(answer(LEASE, { revocationEpoch: 3 }), "lease_mismatch /payload/revocationEpoch");
      assert.equal(answer(LEASE, { selectedVersion: 3 }), "version_mismatch /payload/selectedVersion");
      assert.equal(answer(BOOTSTRAP, { credentialLeaseId: "lease-1" }), "lease_mismatch /payload/credentialLeaseId");
    });
    it("when its lease renewal went unanswered: only a later expiry, and only one the server signed", () => {
      const renewing: RunnerCredential = { ...LEASE, renewalUnanswered: true };
      const renewed = challengeFor(renewing, recordFor(LEASE, { expiresAtUnixMs: NOW + 90_000 }));
      assert.equal(
        refusal(renewed.runner.answer({ ...renewed.server.challenge }, NOW)),
        "ok",
        "the renewal was persisted after all",
      );
      const earlier = challengeFor(renewing, recordFor(LEASE, { expiresAtUnixMs: NOW + 30_000 }));
      assert.equal(
        refusal(earlier.runner.answer({ ...earlier.server.challenge }, NOW)),
        "lease_mismatch /payload/credentialExpiresAtUnixMs",
      );
      const unaware = challengeFor(LEASE, recordFor(LEASE, { expiresAtUnixMs: NOW + 90_000 }));
      assert.equal(
        refusal(unaware.runner.answer({ ...unaware.server.challenge }, NOW)),
        "lease_mismatch /payload/credentialExpiresAtUnixMs",
        "no renewal outstanding",
      );
      const later = NOW + 90_000;
      assert.equal(
        answer(renewing, { credentialExpiresAtUnixMs: later, credentialExpiresAt: new Date(later).toISOString() }),
        "proof_mismatch /payload/serverProof",
      );
    });
    it("and answers only once", () => {
      const { runner, server } = challengeFor(BOOTSTRAP);
      value(runner.answer({ ...server.challenge }, NOW));
      assert.equal(refusal(runner.answer({ ...server.challenge }, NOW)), "unexpected_message ");
    });
  });

  describe("the server refuses the response", () => {
    const respond = (changes: Payload, now = NOW) => {
      const { runner, server } = challengeFor(BOOTSTRAP);
      const answered = value(runner.answer({ ...server.challenge }, NOW));
      return refusal(server.verify({ ...answered.response, ...changes }, now));
    };
    it("with a wrong client proof", () => {
      assert.equal(respond({ clientProof: "00".repeat(32) }), "proof_mismatch /payload/clientProof");
      assert.equal(respond({ clientProof: "00".repeat(31) }), "malformed_handshake /payload/clientProof");
      assert.equal(respond({ clientProof: undefined }), "malformed_handshake /payload/clientProof");
    });
    it("that echoes another nonce or credential", () => {
      assert.equal(
        respond({ serverNonce: "00000000-0000-4000-8000-000000000000" }),
        "echo_mismatch /payload/serverNonce",
      );
      assert.equal(respond({ clientNonce: "00".repeat(32) }), "echo_mismatch /payload/clientNonce");
      assert.equal(respond({ credentialId: credentialId("x") }), "echo_mismatch /payload/credentialId");
    });
    it("after min(credential expiry, 5 s)", () => {
      assert.equal(respond({}, NOW + 5_000), "ok");
      assert.equal(respond({}, NOW + 5_001), "challenge_expired ");
    });
  });

  describe("the runner refuses the welcome", () => {
    const welcome = (
      credential: RunnerCredential,
      changes: Payload,
      envelopeChanges: Payload = {},
      grant = grantFor(credential),
    ) => {
      const { runner, server } = challengeFor(credential);
      const answered = value(runner.answer({ ...server.challenge }, NOW));
      value(server.verify({ ...answered.response }, NOW));
      return refusal(runner.acceptWelcome(welcomeEnvelope(server, grant, changes, envelopeChanges), NOW));
    };
    it("after a bootstrap without a lease token, or a lease with one", () => {
      assert.equal(
        welcome(BOOTSTRAP, { connectionLeaseToken: undefined }),
        "invalid_welcome /payload/connectionLeaseToken",
      );
      assert.equal(
        welcome(LEASE, { connectionLeaseToken: "lease_x" }),
        "invalid_welcome /payload/connectionLeaseToken",
      );
    });
    it("whose lease binding, id or epoch is inconsistent", () => {
      assert.equal(
        welcome(BOOTSTRAP, { leaseBinding: credentialId("lease_other") }),
        "lease_mismatch /payload/leaseBinding",
      );
      assert.equal(
        welcome(LEASE, {}, {}, { ...grantFor(LEASE), connectionLeaseId: "lease-2" }),
        "lease_mismatch /payload/connectionLeaseId",
      );
      assert.equal(
        welcome(LEASE, { connectionLeaseRevocationEpoch: 5 }),
        "lease_mismatch /payload/connectionLeaseRevocationEpoch",
      );
      assert.equal(welcome(BOOTSTRAP, {}, { connectionLeaseId: "lease-other" }), "lease_mismatch /connectionLeaseId");
    });
    it("with another version, identity, connection id, or an expired lease", () => {
      assert.equal(welcome(BOOTSTRAP, { selectedVersion: 2 }), "invalid_welcome /payload/selectedVersion");
      assert.equal(welcome(BOOTSTRAP, {}, { turnId: "turn-2" }), "identity_mismatch /turnId");
      assert.equal(welcome(BOOTSTRAP, {}, { connectionId: "conn-1" }), "invalid_welcome /connectionId");
      assert.equal(
        welcome(BOOTSTRAP, {}, {}, { ...grantFor(BOOTSTRAP), connectionLeaseExpiresAtUnixMs: NOW }),
        "lease_expired /connectionLeaseId",
      );
      assert.equal(welcome(BOOTSTRAP, { pendingCommands: [{}, {}] }), "invalid_welcome /payload/pendingCommands");
      assert.equal(
        welcome(BOOTSTRAP, { connectionLeaseRenewalVersion: 0 }),
        "invalid_welcome /payload/connectionLeaseRenewalVersion",
      );
      assert.equal(
        welcome(BOOTSTRAP, { connectionLeaseRenewalVersion: undefined }),
        "ok",
        "an authority without renewal leaves it out",
      );
    });
    it("whose payload breaks the welcome schema, naming the member and the rule", () => {
      assert.equal(welcome(BOOTSTRAP, { maxBatchEvents: 1.5 }), "invalid_welcome /payload/maxBatchEvents");
      assert.equal(welcome(BOOTSTRAP, { maxFrameBytes: 0 }), "invalid_welcome /payload/maxFrameBytes");
      assert.equal(
        welcome(BOOTSTRAP, { heartbeatIntervalMs: undefined }),
        "invalid_welcome /payload/heartbeatIntervalMs",
      );
      assert.equal(welcome(BOOTSTRAP, { ackedSourceSeq: -1 }), "invalid_welcome /payload/ackedSourceSeq");
      assert.equal(welcome(BOOTSTRAP, { leaseBinding: "sha256:AB" }), "invalid_welcome /payload/leaseBinding");
      assert.equal(welcome(BOOTSTRAP, { connectionLeaseToken: "" }), "invalid_welcome /payload/connectionLeaseToken");
      assert.equal(welcome(BOOTSTRAP, { pendingCommands: {} }), "invalid_welcome /payload/pendingCommands");
      assert.equal(
        welcome(BOOTSTRAP, { connectionLeaseExpiresAt: new Date(NOW + 60_001).toISOString() }),
        "invalid_welcome /payload/connectionLeaseExpiresAt",
      );
      const { runner, server } = challengeFor(BOOTSTRAP);
      value(server.verify({ ...value(runner.answer({ ...server.challenge }, NOW)).response }, NOW));
      const refused = runner.acceptWelcome(welcomeEnvelope(server, grantFor(BOOTSTRAP), { maxBatchEvents: 1.5 }), NOW);
      assert.ok(!refused.ok);
      assert.match(
        refused.error.message,
        /^\/payload\/maxBatchEvents must be integer \(runner-control-envelope\.schema\.json#\/\$defs\/welcome\)$/,
      );
    });
  });
});
