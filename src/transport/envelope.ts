import { parseJson } from "../contract/json-input.js";
import { isPlainObject } from "../contract/plain-object.js";
import { validators } from "../contract/validators.js";
import { MAX_FRAME_BYTES } from "../contract/versions.js";
import type { ValidatorName } from "../contract/validator-names.js";
import { fail, ok, type Result, type TransportErrorCode } from "./errors.js";
import { shapeRefusal, type CodesByMember } from "./shape.js";

/** The envelope constants of runtime.md §5.3 and §5.5 (wire.md §14.4). */
export const ENVELOPE_PROTOCOL = "paperclip.runner";
export const ENVELOPE_VERSION = 1;

/** The six identity fields every post-welcome envelope carries and every check compares. */
export const IDENTITY_FIELDS = [
  "runnerInstanceId",
  "environmentLeaseId",
  "runId",
  "normalizedSessionId",
  "turnId",
  "itemId",
] as const;
export type IdentityField = (typeof IDENTITY_FIELDS)[number];
export type RunIdentity = Record<IdentityField, string>;

/** Identity values (runtime.md §6.1, §15.3). */
export { AUTHORITY_ID_PATTERN as IDENTITY_PATTERN } from "../contract/ids.js";

export const HANDSHAKE_KINDS = ["auth_hello", "auth_challenge", "auth_response"] as const;
export type HandshakeKind = (typeof HANDSHAKE_KINDS)[number];

/** §5.5: what the core may send (welcome is its first sealed envelope, §5.3 step 8). */
export const CORE_TO_RUNNER_KINDS = [
  "welcome",
  "ack",
  "command",
  "revoke",
  "ping",
  "command_result_ack",
  "lease_renewed",
] as const;
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

export const handshakeEnvelope = (kind: HandshakeKind, payload: Payload): HandshakeEnvelope => ({
  protocol: ENVELOPE_PROTOCOL,
  version: ENVELOPE_VERSION,
  kind,
  payload,
});

export function controlEnvelope(
  kind: ControlKind,
  binding: EnvelopeBinding,
  payload: Payload,
  envelopeId: string,
  sentAt: string,
): ControlEnvelope {
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

/**
 * Only the six fields, in their fixed order (IDENTITY_FIELDS), whatever else the object carries.
 * Written out, not mapped over the list: every envelope sent takes one, and the entries a map
 * builds were 2% of what a lease renewal allocated (bench:idle).
 */
export const pickIdentity = (from: RunIdentity): RunIdentity => ({
  runnerInstanceId: from.runnerInstanceId,
  environmentLeaseId: from.environmentLeaseId,
  runId: from.runId,
  normalizedSessionId: from.normalizedSessionId,
  turnId: from.turnId,
  itemId: from.itemId,
});

/** Text to JSON within the frame limit, refusing as a value. */
export function parseFrameText(text: string, maxBytes = MAX_FRAME_BYTES): Result<unknown> {
  const parsed = parseJson(text, maxBytes);
  if (!parsed.ok)
    return fail(
      parsed.error.code === "frame_too_large" ? "frame_too_large" : "invalid_json",
      parsed.error.path,
      parsed.error.message,
    );
  return ok(parsed.value);
}

/** Refusal codes of a handshake envelope's shape by member; the rest is malformed_handshake. */
const HANDSHAKE_CODES: CodesByMember = {
  protocol: "protocol_mismatch",
  version: "version_mismatch",
  kind: "unexpected_message",
};

/**
 * A plaintext handshake envelope of the one kind the handshake expects next. Members beyond the
 * four of §5.3 are ignored (wire.md §14.1: unknown optional members are not an error); the
 * payload is checked by the handshake.
 */
export function checkHandshakeEnvelope(value: unknown, kind: HandshakeKind): Result<Payload> {
  const refused = shapeRefusal("runner_handshake_header", value, "malformed_handshake", HANDSHAKE_CODES);
  if (refused) return refused;
  const envelope = value as Payload;
  if (envelope.kind !== kind)
    return fail("unexpected_message", "/kind", `expected ${kind}, got ${JSON.stringify(envelope.kind)}`);
  return ok(envelope.payload as Payload);
}

/** Who sent a control envelope, and so which kinds it may carry: the welcome first, then the rest (§5.5). */
export type EnvelopeSender = "welcome" | "core" | "runner";
export const SENDER_SCHEMAS: Readonly<Record<EnvelopeSender, ValidatorName>> = {
  welcome: "runner_control_welcome",
  core: "runner_control_from_core",
  runner: "runner_control_from_runner",
};

/**
 * Refusal codes of a control envelope's shape by member; the rest is malformed_envelope. An
 * identity, connection or lease value of the wrong shape cannot be the bound one either.
 */
export const CONTROL_CODES: CodesByMember = {
  protocol: "protocol_mismatch",
  version: "version_mismatch",
  kind: "unknown_kind",
  ...Object.fromEntries(IDENTITY_FIELDS.map((field) => [field, "identity_mismatch"])),
  connectionId: "connection_mismatch",
  connectionLeaseId: "lease_mismatch",
};

/** Each kind's payload rule, as payloadByKind in runner-control-envelope.schema.json has it (a test holds the two equal). */
export const PAYLOAD_SCHEMAS: Readonly<Record<ControlKind, ValidatorName>> = {
  welcome: "runner_welcome_payload",
  ack: "runner_ack_payload",
  command: "runner_command_payload",
  revoke: "runner_revoke_payload",
  ping: "runner_ping_payload",
  command_result_ack: "runner_command_result_ack_payload",
  lease_renewed: "runner_lease_renewed_payload",
  event: "runner_event_payload",
  command_result: "runner_command_result_payload",
  pong: "runner_pong_payload",
  lease_renew: "runner_lease_renew_payload",
};

/** The kinds each sender may send, as its schema's enum has them (a test holds the two equal). */
export const SENDER_KINDS: Readonly<Record<EnvelopeSender, ReadonlySet<string>>> = {
  welcome: new Set(["welcome"]),
  core: new Set(CORE_TO_RUNNER_KINDS.filter((kind) => kind !== "welcome")),
  runner: new Set(RUNNER_TO_CORE_KINDS),
};

/**
 * True when a control envelope meets its sender's schema, checked as the header and its own
 * kind's payload. The sender's schema says the same with an if/then for every kind, and ajv
 * builds an error object for each kind an envelope is not: a tenth of what a lease renewal
 * allocated (bench:idle). A test holds this to the sender's schema on every fixture and on
 * seeded mutations of them; a refusal still comes from that schema, which names the rule.
 */
export function meetsEnvelopeShape(value: unknown, sender: EnvelopeSender): boolean {
  if (!isPlainObject(value)) return false;
  const kind = value.kind;
  return (
    typeof kind === "string" &&
    SENDER_KINDS[sender].has(kind) &&
    validators.runner_control_header(value) &&
    validators[PAYLOAD_SCHEMAS[kind as ControlKind]](value.payload)
  );
}

/** The shape of a control envelope from this sender (runner-control-envelope.schema.json). */
export function checkEnvelopeShape(
  value: unknown,
  sender: EnvelopeSender,
  codes: CodesByMember = CONTROL_CODES,
): Result<ControlEnvelope> {
  const refused = meetsEnvelopeShape(value, sender)
    ? null
    : shapeRefusal(SENDER_SCHEMAS[sender], value, "malformed_envelope", codes);
  if (refused) return refused;
  const env = value as ControlEnvelope;
  if (env.kind === "lease_renewed") {
    const instant = sameInstant(
      env.payload.connectionLeaseExpiresAt,
      env.payload.connectionLeaseExpiresAtUnixMs,
      "malformed_envelope",
      "/payload/connectionLeaseExpiresAt",
    );
    if (instant) return instant;
  }
  return ok(env);
}

/**
 * What a schema cannot know: the six identity fields, the connection id and the lease id are
 * exactly as bound at welcome, and the lease has not expired.
 */
export function checkEnvelopeBinding(
  env: ControlEnvelope,
  binding: EnvelopeBinding,
  nowMs: number,
): Result<ControlEnvelope> {
  for (const field of IDENTITY_FIELDS) {
    if (env[field] !== binding.identity[field])
      return fail("identity_mismatch", `/${field}`, `${field} differs from the run identity`);
  }
  if (env.connectionId !== binding.connectionId)
    return fail("connection_mismatch", "/connectionId", "connectionId differs from this connection");
  if (env.connectionLeaseId !== binding.connectionLeaseId)
    return fail("lease_mismatch", "/connectionLeaseId", "connectionLeaseId differs from this connection's lease");
  if (nowMs >= binding.leaseExpiresAtUnixMs)
    return fail("lease_expired", "/connectionLeaseId", "the connection lease has expired");
  return ok(env);
}

/**
 * A sealed control envelope (§5.5): its shape for this sender, then its binding to the
 * connection. The PRP event or command inside is the consumer's to decode.
 */
export function checkControlEnvelope(
  value: unknown,
  binding: EnvelopeBinding,
  sender: Exclude<EnvelopeSender, "welcome">,
  nowMs: number,
): Result<ControlEnvelope> {
  const shaped = checkEnvelopeShape(value, sender);
  return shaped.ok ? checkEnvelopeBinding(shaped.value, binding, nowMs) : shaped;
}

/** An ISO text and its Unix milliseconds must name the same instant: a rule between two members, which a schema cannot state. */
export function sameInstant(
  iso: unknown,
  unixMs: unknown,
  code: TransportErrorCode,
  path: string,
): Result<never> | null {
  return Date.parse(iso as string) === unixMs
    ? null
    : fail(code, path, "the ISO expiry and the Unix-milliseconds expiry differ");
}
