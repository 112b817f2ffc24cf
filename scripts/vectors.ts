/**
 * `npm run generate:vectors` writes protocol/vectors/secure-session.json: fixed tokens, nonces,
 * challenge fields and plaintexts, and what runtime.md §5.2–§5.4 derive from them (credential id,
 * auth key digest, canonical challenge, both proofs, binding, session id, both keys, and the
 * first two sealed frames each way), so another implementation can check itself byte for byte.
 * `npm run check:vectors` (run by `npm test`) writes nothing and fails on any difference.
 * Everything goes through src/transport, the two sides of the handshake included.
 */
import { join } from "node:path";
import { protocolDir } from "../src/contract/package-root.js";
import {
  LABELS,
  RunnerHandshake,
  Sealer,
  ServerHandshake,
  authKey,
  authKeyDigest,
  canonicalChallenge,
  controlEnvelope,
  domainMessage,
  frameAad,
  frameNonce,
  parseHello,
  type CredentialRecord,
  type Direction,
  type EnvelopeBinding,
  type LeaseGrant,
  type Payload,
  type RunExpectation,
  type RunIdentity,
  type RunnerCredential,
} from "../src/transport/index.js";
import { runGenerator } from "./generator.js";

const NOW_MS = Date.UTC(2026, 0, 1);
const IDENTITY: RunIdentity = {
  runnerInstanceId: "runner-vector-1",
  environmentLeaseId: "env-vector-1",
  runId: "run-vector-1",
  normalizedSessionId: "session-vector-1",
  turnId: "turn-vector-1",
  itemId: "item-vector-1",
};
const EXPECTED: RunExpectation = {
  identity: IDENTITY,
  runnerVersion: "0.1.0",
  runnerDigest: `sha256:${"ab".repeat(32)}`,
  range: { min: 1, max: 3 },
};
const RESUME = { lastControllerCommandSeq: 0, nextSourceEventSeq: 1, ackedSourceSeq: 0 };

interface SessionCase {
  name: string;
  credential: RunnerCredential;
  clientNonce: string;
  serverNonce: string;
  record: Omit<CredentialRecord, "credentialId" | "authKeyDigest" | "kind" | "identity">;
  grant: LeaseGrant;
}

const CASES: SessionCase[] = [
  {
    name: "bootstrap",
    credential: { kind: "bootstrap", token: "bootstrap_5f0c6b1e-8a3d-4c2b-9e7f-1a2b3c4d5e6f" },
    clientNonce: Buffer.from(Array.from({ length: 32 }, (_, i) => i)).toString("hex"),
    serverNonce: "123e4567-e89b-42d3-a456-426614174000",
    record: {
      expiresAtUnixMs: NOW_MS + 5_000,
      used: false,
      revoked: false,
      leaseId: null,
      revocationEpoch: 0,
      protocolVersion: null,
    },
    grant: {
      connectionId: "connection_1",
      connectionLeaseId: "lease-vector-1",
      connectionLeaseToken: "lease_0b9d2f64-7c1e-4a55-8d3b-6e2f1a0c9b87",
      connectionLeaseExpiresAtUnixMs: NOW_MS + 60_000,
      connectionLeaseRevocationEpoch: 0,
      ackedSourceSeq: 0,
      pendingCommands: [],
    },
  },
  {
    name: "lease",
    credential: {
      kind: "lease",
      token: "lease_0b9d2f64-7c1e-4a55-8d3b-6e2f1a0c9b87",
      leaseId: "lease-vector-1",
      expiresAtUnixMs: NOW_MS + 60_000,
      revocationEpoch: 3,
      protocolVersion: 2,
    },
    clientNonce: Buffer.from(Array.from({ length: 32 }, (_, i) => 255 - i)).toString("hex"),
    serverNonce: "9b2d4c1a-3e5f-4a6b-8c7d-0e1f2a3b4c5d",
    record: {
      expiresAtUnixMs: NOW_MS + 60_000,
      used: false,
      revoked: false,
      leaseId: "lease-vector-1",
      revocationEpoch: 3,
      protocolVersion: 2,
    },
    grant: {
      connectionId: "connection_2",
      connectionLeaseId: "lease-vector-1",
      connectionLeaseToken: null,
      connectionLeaseExpiresAtUnixMs: NOW_MS + 60_000,
      connectionLeaseRevocationEpoch: 3,
      ackedSourceSeq: 1,
      pendingCommands: [],
    },
  },
];

function fail(message: string): never {
  throw new Error(`vectors: ${message}`);
}

function sealFrames(direction: Direction, key: Buffer, sessionId: string, plaintexts: string[]) {
  const sealer = new Sealer(Buffer.from(key), sessionId, direction);
  const frames = plaintexts.map((plaintext, counter) => {
    const sealed = sealer.seal(plaintext);
    if (!sealed.ok) fail(sealed.error.message);
    return {
      direction,
      counter,
      nonce: frameNonce(direction, counter).toString("hex"),
      aad: frameAad(sessionId, direction, counter).toString("utf8"),
      plaintext,
      frame: sealed.value,
    };
  });
  sealer.destroy();
  return frames;
}

function sessionVector(c: SessionCase) {
  const key = authKey(c.credential.token);
  const runner = new RunnerHandshake({
    credential: c.credential,
    identity: IDENTITY,
    runnerVersion: EXPECTED.runnerVersion,
    runnerDigest: EXPECTED.runnerDigest,
    resume: RESUME,
    clientNonce: c.clientNonce,
  });
  const hello = parseHello({ ...runner.hello });
  if (!hello.ok) fail(hello.error.message);
  const record: CredentialRecord = {
    ...c.record,
    credentialId: hello.value.credentialId,
    authKeyDigest: authKeyDigest(key),
    kind: c.credential.kind,
    identity: IDENTITY,
  };
  const server = ServerHandshake.challenge(hello.value, record, EXPECTED, NOW_MS, c.serverNonce);
  if (!server.ok) fail(server.error.message);
  const answered = runner.answer({ ...server.value.challenge }, NOW_MS);
  if (!answered.ok) fail(answered.error.message);
  const verified = server.value.verify({ ...answered.value.response }, NOW_MS);
  if (!verified.ok) fail(verified.error.message);
  const keys = verified.value.keys;
  if (
    !keys.clientToCore.equals(answered.value.keys.clientToCore) ||
    !keys.coreToClient.equals(answered.value.keys.coreToClient)
  )
    fail("the two sides derived different keys");

  const binding: EnvelopeBinding = {
    identity: IDENTITY,
    connectionId: c.grant.connectionId,
    connectionLeaseId: c.grant.connectionLeaseId,
    leaseExpiresAtUnixMs: c.grant.connectionLeaseExpiresAtUnixMs,
  };
  const sentAt = new Date(NOW_MS).toISOString();
  const envelope = (kind: Parameters<typeof controlEnvelope>[0], n: number, payload: Payload) =>
    JSON.stringify(controlEnvelope(kind, binding, payload, `envelope-${c.name}-${kind}-${n}`, sentAt));
  const welcome = envelope("welcome", 0, { ...server.value.welcome(c.grant) });
  const welcomeCheck = runner.acceptWelcome(JSON.parse(welcome), NOW_MS);
  if (!welcomeCheck.ok) fail(welcomeCheck.error.message);

  const { serverProof, ...fields } = server.value.challenge;
  const vector = {
    name: c.name,
    token: c.credential.token,
    credentialKind: c.credential.kind,
    credentialId: hello.value.credentialId,
    authKeyDigest: record.authKeyDigest,
    challenge: fields,
    canonicalChallenge: canonicalChallenge(fields),
    serverProof,
    clientProof: answered.value.response.clientProof,
    binding: keys.binding.toString("hex"),
    sessionId: keys.sessionId,
    clientToCoreKey: keys.clientToCore.toString("hex"),
    coreToClientKey: keys.coreToClient.toString("hex"),
    frames: [
      ...sealFrames("core_to_client", keys.coreToClient, keys.sessionId, [welcome, envelope("ping", 1, {})]),
      ...sealFrames("client_to_core", keys.clientToCore, keys.sessionId, [
        envelope("event", 0, { sourceSeq: 1, sourceEventId: `event_${IDENTITY.runnerInstanceId}_0000000000000001` }),
        envelope("pong", 1, { lifecycle: "running", outboxBytes: 0, ackedSourceSeq: 0 }),
      ]),
    ],
  };
  key.fill(0);
  return vector;
}

function secureSessionVectors() {
  const framingToken = CASES[0]!.credential.token;
  return {
    schema: "paperclip.runner.secure-session-vectors.v1",
    about:
      "runtime.md §5.2–§5.4. Hex is lower-case; text is UTF-8. framing shows one domain-framed message byte for byte. In each session, challenge holds the signed members (serverProof left out); frames are the first two sealed frames of each direction, counters 0 and 1, with the nonce, the AAD and the plaintext they seal.",
    labels: LABELS,
    framing: {
      label: LABELS.credentialId,
      parts: [framingToken],
      message: domainMessage(LABELS.credentialId, [framingToken]).toString("hex"),
    },
    sessions: CASES.map(sessionVector),
  };
}

const check = process.argv.includes("--check");
const path = join(protocolDir(), "vectors", "secure-session.json");
await runGenerator(
  check,
  async () => [{ path, text: `${JSON.stringify(secureSessionVectors(), null, 2)}\n` }],
  "npm run generate:vectors",
);
