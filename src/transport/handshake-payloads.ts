import type { ChallengeFields } from "./derive.js";
import { IDENTITY_FIELDS, IDENTITY_PATTERN, isCount, isPlainObject, type Payload, type RunIdentity } from "./envelope.js";
import { fail, ok, type Result, type TransportErrorCode } from "./errors.js";

/** The shapes of the handshake payloads (runtime.md §5.3) and the checks that admit them. */

export type CredentialKind = "bootstrap" | "lease";

export interface ResumePoint {
  lastControllerCommandSeq: number;
  nextSourceEventSeq: number;
  ackedSourceSeq: number;
}

/** Step 1. The identity fields sit beside the others, flat, as the challenge echoes them. */
export interface AuthHello extends RunIdentity {
  credentialId: string;
  credentialKind: CredentialKind;
  clientNonce: string;
  protocolMin: number;
  protocolMax: number;
  runnerVersion: string;
  runnerDigest: string;
  resume: ResumePoint;
}

/** Step 3: the signed members plus the proof over them. */
export interface AuthChallenge extends ChallengeFields {
  serverProof: string;
}

/** Step 5. */
export interface AuthResponse {
  credentialId: string;
  clientNonce: string;
  serverNonce: string;
  clientProof: string;
}

/** Step 8: the payload of the sealed welcome. `connectionLeaseToken` only after a bootstrap. */
export interface WelcomePayload {
  selectedVersion: number;
  heartbeatIntervalMs: number;
  connectionLeaseId: string;
  connectionLeaseToken?: string;
  connectionLeaseExpiresAt: string;
  connectionLeaseExpiresAtUnixMs: number;
  connectionLeaseRevocationEpoch: number;
  /** The lease renewal the authority offers (§5.9); absent from an authority without renewal. */
  connectionLeaseRenewalVersion?: number;
  leaseBinding: string;
  maxFrameBytes: number;
  maxBatchEvents: number;
  ackedSourceSeq: number;
  pendingCommands: unknown[];
}

const SHA256_ID = /^sha256:[0-9a-f]{64}$/;
const HEX_32_BYTES = /^[0-9a-f]{64}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const CONNECTION_ID = /^connection_[0-9]+$/;
const MAX_TEXT = 240;

type Check = (v: unknown) => boolean;
const matches = (re: RegExp): Check => (v) => typeof v === "string" && re.test(v);
const text: Check = (v) => typeof v === "string" && v.length > 0 && v.length <= MAX_TEXT;
const positive: Check = (v) => Number.isSafeInteger(v) && (v as number) > 0;
const kind: Check = (v) => v === "bootstrap" || v === "lease";
const identityValue = matches(IDENTITY_PATTERN);
const leaseIdOrNull: Check = (v) => v === null || identityValue(v);

/** `{member: [check, what it must be]}`; the first member that fails names the refusal. */
type Shape = Record<string, [Check, string]>;

function checkShape(payload: Payload, shape: Shape, code: TransportErrorCode, base: string): Result<Payload> {
  for (const [member, [check, what]] of Object.entries(shape)) {
    if (!check(payload[member])) return fail(code, `${base}/${member}`, `${member} must be ${what}`);
  }
  return ok(payload);
}

const IDENTITY_SHAPE: Shape = Object.fromEntries(IDENTITY_FIELDS.map((f) => [f, [identityValue, "an identity value"]]));

const HELLO_SHAPE: Shape = {
  credentialId: [matches(SHA256_ID), "sha256:<64 hex>"],
  credentialKind: [kind, '"bootstrap" or "lease"'],
  clientNonce: [matches(HEX_32_BYTES), "32 bytes in lower-case hex"],
  protocolMin: [positive, "a positive integer"],
  protocolMax: [positive, "a positive integer"],
  ...IDENTITY_SHAPE,
  runnerVersion: [text, `a string of 1 to ${MAX_TEXT} characters`],
  runnerDigest: [matches(SHA256_ID), "sha256:<64 hex>"],
  resume: [isPlainObject, "an object"],
};

const RESUME_SHAPE: Shape = {
  lastControllerCommandSeq: [isCount, "a non-negative integer"],
  nextSourceEventSeq: [isCount, "a non-negative integer"],
  ackedSourceSeq: [isCount, "a non-negative integer"],
};

const CHALLENGE_SHAPE: Shape = {
  ...IDENTITY_SHAPE,
  credentialId: [matches(SHA256_ID), "sha256:<64 hex>"],
  credentialKind: [kind, '"bootstrap" or "lease"'],
  clientNonce: [matches(HEX_32_BYTES), "32 bytes in lower-case hex"],
  serverNonce: [matches(UUID), "a lower-case UUID"],
  selectedVersion: [positive, "a positive integer"],
  credentialLeaseId: [leaseIdOrNull, "an identity value or null"],
  credentialExpiresAt: [(v) => typeof v === "string", "an ISO timestamp"],
  credentialExpiresAtUnixMs: [positive, "a positive integer"],
  revocationEpoch: [isCount, "a non-negative integer"],
  serverProof: [matches(HEX_32_BYTES), "32 bytes in lower-case hex"],
};

const RESPONSE_SHAPE: Shape = {
  credentialId: [matches(SHA256_ID), "sha256:<64 hex>"],
  clientNonce: [matches(HEX_32_BYTES), "32 bytes in lower-case hex"],
  serverNonce: [matches(UUID), "a lower-case UUID"],
  clientProof: [matches(HEX_32_BYTES), "32 bytes in lower-case hex"],
};

const WELCOME_SHAPE: Shape = {
  selectedVersion: [positive, "a positive integer"],
  heartbeatIntervalMs: [positive, "a positive integer"],
  connectionLeaseId: [identityValue, "an identity value"],
  connectionLeaseToken: [(v) => v === undefined || text(v), "absent or a non-empty string"],
  connectionLeaseExpiresAt: [(v) => typeof v === "string", "an ISO timestamp"],
  connectionLeaseExpiresAtUnixMs: [positive, "a positive integer"],
  connectionLeaseRevocationEpoch: [isCount, "a non-negative integer"],
  connectionLeaseRenewalVersion: [(v) => v === undefined || positive(v), "absent or a positive integer"],
  leaseBinding: [matches(SHA256_ID), "sha256:<64 hex>"],
  maxFrameBytes: [positive, "a positive integer"],
  maxBatchEvents: [positive, "a positive integer"],
  ackedSourceSeq: [isCount, "a non-negative integer"],
  pendingCommands: [(v) => Array.isArray(v) && v.length <= 1, "an array of at most one command"],
};

/** An ISO text and its Unix milliseconds must name the same instant. */
function sameInstant(iso: unknown, unixMs: unknown, code: TransportErrorCode, path: string): Result<never> | null {
  return Date.parse(iso as string) === unixMs ? null : fail(code, path, "the ISO expiry and the Unix-milliseconds expiry differ");
}

export function parseHello(payload: Payload): Result<AuthHello> {
  const shaped = checkShape(payload, HELLO_SHAPE, "malformed_handshake", "/payload");
  if (!shaped.ok) return shaped;
  const resume = checkShape(payload.resume as Payload, RESUME_SHAPE, "malformed_handshake", "/payload/resume");
  if (!resume.ok) return resume;
  if ((payload.protocolMin as number) > (payload.protocolMax as number)) return fail("malformed_handshake", "/payload/protocolMin", "protocolMin must not exceed protocolMax");
  return ok(payload as unknown as AuthHello);
}

export function parseChallenge(payload: Payload): Result<AuthChallenge> {
  const shaped = checkShape(payload, CHALLENGE_SHAPE, "malformed_handshake", "/payload");
  if (!shaped.ok) return shaped;
  return sameInstant(payload.credentialExpiresAt, payload.credentialExpiresAtUnixMs, "malformed_handshake", "/payload/credentialExpiresAt") ?? ok(payload as unknown as AuthChallenge);
}

export function parseResponse(payload: Payload): Result<AuthResponse> {
  const shaped = checkShape(payload, RESPONSE_SHAPE, "malformed_handshake", "/payload");
  return shaped.ok ? ok(payload as unknown as AuthResponse) : shaped;
}

export function parseWelcome(payload: Payload, connectionId: unknown): Result<WelcomePayload> {
  if (!matches(CONNECTION_ID)(connectionId)) return fail("invalid_welcome", "/connectionId", "connectionId must be connection_<n>");
  const shaped = checkShape(payload, WELCOME_SHAPE, "invalid_welcome", "/payload");
  if (!shaped.ok) return shaped;
  return sameInstant(payload.connectionLeaseExpiresAt, payload.connectionLeaseExpiresAtUnixMs, "invalid_welcome", "/payload/connectionLeaseExpiresAt") ?? ok(payload as unknown as WelcomePayload);
}
