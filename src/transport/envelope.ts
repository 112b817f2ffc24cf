import { parseJson } from "../contract/json-input.js";
import { isPlainObject } from "../contract/plain-object.js";
import { MAX_FRAME_BYTES } from "../contract/versions.js";
import { fail, ok, type Result, type TransportErrorCode } from "./errors.js";

/** The envelope constants of runtime.md §5.3 and §5.5 (wire.md §14.4). */
export const ENVELOPE_PROTOCOL = "paperclip.runner";
export const ENVELOPE_VERSION = 1;

/** The six identity fields every post-welcome envelope carries and every check compares. */
export const IDENTITY_FIELDS = ["runnerInstanceId", "environmentLeaseId", "runId", "normalizedSessionId", "turnId", "itemId"] as const;
export type IdentityField = (typeof IDENTITY_FIELDS)[number];
export type RunIdentity = Record<IdentityField, string>;

/** Identity values (runtime.md §6.1, §15.3). */
export { AUTHORITY_ID_PATTERN as IDENTITY_PATTERN } from "../contract/ids.js";

export const HANDSHAKE_KINDS = ["auth_hello", "auth_challenge", "auth_response"] as const;
export type HandshakeKind = (typeof HANDSHAKE_KINDS)[number];

/** §5.5: what the core may send (welcome is its first sealed envelope, §5.3 step 8). */
export const CORE_TO_RUNNER_KINDS = ["welcome", "ack", "command", "revoke", "ping", "command_result_ack", "lease_renewed"] as const;
/** §5.5: what the runner may send. */
export const RUNNER_TO_CORE_KINDS = ["event", "command_result", "pong", "lease_renew"] as const;
export type CoreToRunnerKind = (typeof CORE_TO_RUNNER_KINDS)[number];
export type RunnerToCoreKind = (typeof RUNNER_TO_CORE_KINDS)[number];
export type ControlKind = CoreToRunnerKind | RunnerToCoreKind;

export type Payload = Record<string, unknown>;

/** The plaintext envelope of the handshake (§5.3). */
export interface HandshakeEnvelope {
  protocol: typeof ENVELOPE_PROTOCOL;
  version: typeof ENVELOPE_VERSION;
  kind: HandshakeKind;
  payload: Payload;
}

/** The sealed envelope after authentication (§5.3 step 8, §5.5). */
export interface ControlEnvelope extends RunIdentity {
  protocol: typeof ENVELOPE_PROTOCOL;
  version: typeof ENVELOPE_VERSION;
  kind: ControlKind;
  envelopeId: string;
  connectionId: string;
  connectionLeaseId: string;
  sentAt: string;
  payload: Payload;
}

/** What every envelope of one connection must agree with: fixed at welcome. */
export interface EnvelopeBinding {
  identity: RunIdentity;
  connectionId: string;
  connectionLeaseId: string;
  /** The lease ends the connection's authority: no envelope is acted on at or after it. */
  leaseExpiresAtUnixMs: number;
}

export { isPlainObject };
export const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;

export const handshakeEnvelope = (kind: HandshakeKind, payload: Payload): HandshakeEnvelope => ({ protocol: ENVELOPE_PROTOCOL, version: ENVELOPE_VERSION, kind, payload });

export function controlEnvelope(kind: ControlKind, binding: EnvelopeBinding, payload: Payload, envelopeId: string, sentAt: string): ControlEnvelope {
  return {
    protocol: ENVELOPE_PROTOCOL,
    version: ENVELOPE_VERSION,
    kind,
    envelopeId,
    ...pickIdentity(binding.identity),
    connectionId: binding.connectionId,
    connectionLeaseId: binding.connectionLeaseId,
    sentAt,
    payload,
  };
}

/** Only the six fields, in their fixed order, whatever else the object carries. */
export const pickIdentity = (from: RunIdentity): RunIdentity =>
  Object.fromEntries(IDENTITY_FIELDS.map((field) => [field, from[field]])) as RunIdentity;

/** Text to JSON within the frame limit, refusing as a value. */
export function parseFrameText(text: string, maxBytes = MAX_FRAME_BYTES): Result<unknown> {
  const parsed = parseJson(text, maxBytes);
  if (!parsed.ok) return fail(parsed.error.code === "frame_too_large" ? "frame_too_large" : "invalid_json", parsed.error.path, parsed.error.message);
  return ok(parsed.value);
}

/** The protocol and version every envelope starts with, in the order a reader reports them. */
function checkHeader(value: unknown, malformed: TransportErrorCode): Result<Payload> {
  if (!isPlainObject(value)) return fail(malformed, "", "the envelope is not a JSON object");
  if (value.protocol !== ENVELOPE_PROTOCOL) return fail("protocol_mismatch", "/protocol", `protocol must be "${ENVELOPE_PROTOCOL}"`);
  if (value.version !== ENVELOPE_VERSION) return fail("version_mismatch", "/version", `envelope version must be ${ENVELOPE_VERSION}`);
  if (!isPlainObject(value.payload)) return fail(malformed, "/payload", "payload must be a JSON object");
  return ok(value);
}

/**
 * A plaintext handshake envelope of the one kind the handshake expects next. Members beyond the
 * four of §5.3 are ignored (wire.md §14.1: unknown optional members are not an error); the
 * payload is checked by the handshake.
 */
export function checkHandshakeEnvelope(value: unknown, kind: HandshakeKind): Result<Payload> {
  const header = checkHeader(value, "malformed_handshake");
  if (!header.ok) return header;
  if (header.value.kind !== kind) return fail("unexpected_message", "/kind", `expected ${kind}, got ${JSON.stringify(header.value.kind)}`);
  return ok(header.value.payload as Payload);
}

/**
 * A sealed control envelope (§5.5): protocol and version, a kind this direction may send, the six
 * identity fields, the connection id and lease id exactly as bound at welcome, and a lease that
 * has not expired. The payload of a PRP event or command is the consumer's to decode.
 */
export function checkControlEnvelope(value: unknown, binding: EnvelopeBinding, kinds: readonly ControlKind[], nowMs: number): Result<ControlEnvelope> {
  const header = checkHeader(value, "malformed_envelope");
  if (!header.ok) return header;
  const env = header.value;
  if (!kinds.includes(env.kind as ControlKind)) return fail("unknown_kind", "/kind", `kind ${JSON.stringify(env.kind)} is not one of ${kinds.join(", ")}`);
  for (const field of IDENTITY_FIELDS) {
    if (env[field] !== binding.identity[field]) return fail("identity_mismatch", `/${field}`, `${field} differs from the run identity`);
  }
  if (env.connectionId !== binding.connectionId) return fail("connection_mismatch", "/connectionId", "connectionId differs from this connection");
  if (env.connectionLeaseId !== binding.connectionLeaseId) return fail("lease_mismatch", "/connectionLeaseId", "connectionLeaseId differs from this connection's lease");
  if (typeof env.envelopeId !== "string" || env.envelopeId === "") return fail("malformed_envelope", "/envelopeId", "envelopeId must be a non-empty string");
  if (typeof env.sentAt !== "string") return fail("malformed_envelope", "/sentAt", "sentAt must be a string");
  if (nowMs >= binding.leaseExpiresAtUnixMs) return fail("lease_expired", "/connectionLeaseId", "the connection lease has expired");
  const payloadError = checkPayload(env.kind as ControlKind, env.payload as Payload);
  if (payloadError) return payloadError;
  return ok(env as unknown as ControlEnvelope);
}

const isUnixMs = (v: unknown): boolean => Number.isSafeInteger(v) && (v as number) > 0;
const COUNT: [(v: unknown) => boolean, string] = [isCount, "a non-negative integer"];
const UNIX_MS: [(v: unknown) => boolean, string] = [isUnixMs, "a positive integer"];

/** Per kind, the members a receiver acts on at once; a wrong type there must not reach the state machine. */
const PAYLOAD_MEMBERS: Partial<Record<ControlKind, Record<string, [(v: unknown) => boolean, string]>>> = {
  ack: { ackedSourceSeq: COUNT },
  revoke: { revocationEpoch: COUNT },
  // §5.9: the expiry the runner holds and its epoch; the reply echoes the previous expiry.
  lease_renew: { currentExpiresAtUnixMs: UNIX_MS, revocationEpoch: COUNT },
  lease_renewed: { previousExpiresAtUnixMs: UNIX_MS, connectionLeaseExpiresAtUnixMs: UNIX_MS, connectionLeaseExpiresAt: [(v) => typeof v === "string", "an ISO timestamp"], revocationEpoch: COUNT },
};

function checkPayload(kind: ControlKind, payload: Payload): Result<never> | null {
  for (const [member, [check, what]] of Object.entries(PAYLOAD_MEMBERS[kind] ?? {})) {
    if (!check(payload[member])) return fail("malformed_envelope", `/payload/${member}`, `${member} must be ${what}`);
  }
  if (kind === "lease_renewed" && Date.parse(payload.connectionLeaseExpiresAt as string) !== payload.connectionLeaseExpiresAtUnixMs) {
    return fail("malformed_envelope", "/payload/connectionLeaseExpiresAt", "the ISO expiry and the Unix-milliseconds expiry differ");
  }
  return null;
}
