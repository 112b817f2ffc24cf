import { randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import { LOCAL_RANGE, negotiate, type VersionRange } from "../contract/negotiate.js";
import { MAX_FRAME_BYTES } from "../contract/versions.js";
import {
  authKey,
  authKeyFromDigest,
  canonicalChallenge,
  clientProof,
  credentialId,
  serverProof,
  sessionKeys,
  type ChallengeFields,
  type SessionKeys,
} from "./derive.js";
import {
  CONTROL_CODES,
  IDENTITY_FIELDS,
  checkEnvelopeBinding,
  checkEnvelopeShape,
  pickIdentity,
  sameInstant,
  type EnvelopeBinding,
  type Payload,
  type RunIdentity,
} from "./envelope.js";
import { fail, ok, type Result, type TransportError } from "./errors.js";
import { CHALLENGE_TTL_MS, HEARTBEAT_INTERVAL_MS, LEASE_RENEWAL_VERSION, MAX_BATCH_EVENTS } from "./limits.js";
import type { CodesByMember } from "./shape.js";
import {
  parseChallenge,
  parseResponse,
  type AuthChallenge,
  type AuthHello,
  type AuthResponse,
  type CredentialKind,
  type ResumePoint,
  type WelcomePayload,
} from "./handshake-payloads.js";

/** A lease as the runner holds it, in memory only (§5.9). */
export interface RunnerLease {
  kind: "lease";
  token: string;
  leaseId: string;
  expiresAtUnixMs: number;
  revocationEpoch: number;
  /** A lease stays on the protocol version it was issued under (wire.md §14.3). */
  protocolVersion: number;
  /**
   * A `lease_renew` of this expiry went out and its answer never came: the authority may have
   * persisted a later one, which the next challenge then carries (§5.9).
   */
  renewalUnanswered?: boolean;
}

export type RunnerCredential = { kind: "bootstrap"; token: string } | RunnerLease;

export interface RunnerHandshakeOptions {
  credential: RunnerCredential;
  identity: RunIdentity;
  runnerVersion: string;
  runnerDigest: string;
  /** The contract digest this runner was built for, sent so the authority can judge it (runtime.md §12.2). */
  contractDigest?: string;
  resume: ResumePoint;
  range?: VersionRange;
  /** Fixed only by test vectors; otherwise 32 fresh random bytes. */
  clientNonce?: string;
}

/** What a runner has once the sealed welcome is accepted. */
export interface RunnerWelcome {
  binding: EnvelopeBinding;
  payload: WelcomePayload;
  /** The lease to reconnect with: new after a bootstrap, the same one renewed after a lease. */
  lease: RunnerLease;
}

/** A welcome's connection id and payload are its own to get wrong; the rest is refused as in any envelope. */
const WELCOME_CODES: CodesByMember = { ...CONTROL_CODES, connectionId: "invalid_welcome", payload: "invalid_welcome" };

const sameHex = (a: string, b: string): boolean => timingSafeEqual(Buffer.from(a, "hex"), Buffer.from(b, "hex"));

/**
 * The runner's side of §5.3: the hello, then the challenge checks and the response, then the
 * welcome checks. Holds the auth key only until the response is built.
 */
export class RunnerHandshake {
  readonly hello: AuthHello;
  private key: Buffer | null;
  private selectedVersion = 0;

  constructor(private readonly options: RunnerHandshakeOptions) {
    const range = options.range ?? LOCAL_RANGE;
    this.key = authKey(options.credential.token);
    this.hello = {
      credentialId: credentialId(options.credential.token),
      credentialKind: options.credential.kind,
      clientNonce: options.clientNonce ?? randomBytes(32).toString("hex"),
      protocolMin: range.min,
      protocolMax: range.max,
      ...pickIdentity(options.identity),
      runnerVersion: options.runnerVersion,
      runnerDigest: options.runnerDigest,
      ...(options.contractDigest !== undefined ? { contractDigest: options.contractDigest } : {}),
      resume: { ...options.resume },
    };
  }

  /** Step 4 then step 5: the checks on the challenge, the response, and the session keys. */
  answer(payload: Payload, nowMs: number): Result<{ response: AuthResponse; keys: SessionKeys }> {
    try {
      if (this.key === null) return fail("unexpected_message", "", "this handshake already answered a challenge");
      const checked = this.checkChallenge(payload, nowMs);
      if (!checked.ok) return checked;
      const challenge = checked.value;
      const canonical = canonicalChallenge(challenge);
      if (!sameHex(serverProof(this.key, canonical), challenge.serverProof))
        return fail("proof_mismatch", "/payload/serverProof", "the server proof does not verify");
      const proof = clientProof(this.key, canonical, challenge.serverProof);
      this.selectedVersion = challenge.selectedVersion;
      const response: AuthResponse = {
        credentialId: this.hello.credentialId,
        clientNonce: this.hello.clientNonce,
        serverNonce: challenge.serverNonce,
        clientProof: proof,
      };
      return ok({ response, keys: sessionKeys(this.key, canonical, challenge.serverProof, proof) });
    } finally {
      this.destroy(); // one challenge per handshake, answered or refused
    }
  }

  private checkChallenge(payload: Payload, nowMs: number): Result<AuthChallenge> {
    const parsed = parseChallenge(payload);
    if (!parsed.ok) return parsed;
    const c = parsed.value;
    for (const member of [...IDENTITY_FIELDS, "credentialId", "credentialKind", "clientNonce"] as const) {
      if (c[member] !== this.hello[member])
        return fail("echo_mismatch", `/payload/${member}`, `${member} is not the value this runner sent`);
    }
    const range = this.options.range ?? LOCAL_RANGE;
    const version = negotiate(range, { min: c.selectedVersion, max: c.selectedVersion });
    if (!version.ok) return fail("version_mismatch", "/payload/selectedVersion", version.error.message);
    if (c.credentialExpiresAtUnixMs <= nowMs)
      return fail("credential_expired", "/payload/credentialExpiresAtUnixMs", "the credential has expired");
    const held = this.options.credential;
    if (held.kind === "bootstrap") {
      if (c.credentialLeaseId !== null || c.revocationEpoch !== 0)
        return fail(
          "lease_mismatch",
          "/payload/credentialLeaseId",
          "a bootstrap challenge carries no lease id and epoch 0",
        );
    } else {
      if (c.credentialLeaseId !== held.leaseId)
        return fail(
          "lease_mismatch",
          "/payload/credentialLeaseId",
          "credentialLeaseId is not the lease this runner holds",
        );
      const renewedMeanwhile = held.renewalUnanswered === true && c.credentialExpiresAtUnixMs > held.expiresAtUnixMs;
      if (c.credentialExpiresAtUnixMs !== held.expiresAtUnixMs && !renewedMeanwhile)
        return fail(
          "lease_mismatch",
          "/payload/credentialExpiresAtUnixMs",
          "the lease expiry is not the one this runner holds",
        );
      if (c.revocationEpoch !== held.revocationEpoch)
        return fail(
          "lease_mismatch",
          "/payload/revocationEpoch",
          "the revocation epoch is not the one this runner holds",
        );
      if (c.selectedVersion !== held.protocolVersion)
        return fail(
          "version_mismatch",
          "/payload/selectedVersion",
          `a lease stays on protocol version ${held.protocolVersion}`,
        );
    }
    return ok(c);
  }

  /** Step 8, runner side: identity, connection and lease consistency of the opened welcome. */
  acceptWelcome(envelope: unknown, nowMs: number): Result<RunnerWelcome> {
    const shaped = checkEnvelopeShape(envelope, "welcome", WELCOME_CODES);
    if (!shaped.ok) return shaped;
    const welcome = shaped.value.payload as unknown as WelcomePayload;
    const instant = sameInstant(
      welcome.connectionLeaseExpiresAt,
      welcome.connectionLeaseExpiresAtUnixMs,
      "invalid_welcome",
      "/payload/connectionLeaseExpiresAt",
    );
    if (instant) return instant;
    // The connection id and lease come from the welcome itself; everything else is checked against them.
    const binding: EnvelopeBinding = {
      identity: pickIdentity(this.options.identity),
      connectionId: shaped.value.connectionId,
      connectionLeaseId: welcome.connectionLeaseId,
      leaseExpiresAtUnixMs: welcome.connectionLeaseExpiresAtUnixMs,
    };
    const checked = checkEnvelopeBinding(shaped.value, binding, nowMs);
    if (!checked.ok) return checked;
    if (welcome.selectedVersion !== this.selectedVersion)
      return fail("invalid_welcome", "/payload/selectedVersion", "selectedVersion differs from the challenge");
    const held = this.options.credential;
    let token: string;
    if (held.kind === "bootstrap") {
      if (welcome.connectionLeaseToken === undefined)
        return fail("invalid_welcome", "/payload/connectionLeaseToken", "a bootstrap welcome must carry a lease token");
      token = welcome.connectionLeaseToken;
    } else {
      if (welcome.connectionLeaseToken !== undefined)
        return fail("invalid_welcome", "/payload/connectionLeaseToken", "a lease welcome must not carry a lease token");
      if (welcome.connectionLeaseId !== held.leaseId)
        return fail(
          "lease_mismatch",
          "/payload/connectionLeaseId",
          "connectionLeaseId is not the lease this runner holds",
        );
      if (welcome.connectionLeaseRevocationEpoch !== held.revocationEpoch)
        return fail(
          "lease_mismatch",
          "/payload/connectionLeaseRevocationEpoch",
          "the revocation epoch is not the one this runner holds",
        );
      token = held.token;
    }
    if (welcome.leaseBinding !== credentialId(token))
      return fail("lease_mismatch", "/payload/leaseBinding", "leaseBinding does not locate the lease of this welcome");
    const lease: RunnerLease = {
      kind: "lease",
      token,
      leaseId: welcome.connectionLeaseId,
      expiresAtUnixMs: welcome.connectionLeaseExpiresAtUnixMs,
      revocationEpoch: welcome.connectionLeaseRevocationEpoch,
      protocolVersion: welcome.selectedVersion,
    };
    return ok({ binding, payload: welcome, lease });
  }

  /** Zeroes the auth key; idempotent. */
  destroy(): void {
    this.key?.fill(0);
    this.key = null;
  }
}

/** A ticket or lease as the authority stores it (§5.2, §6.2): digests and facts, never a token. */
export interface CredentialRecord {
  credentialId: string;
  kind: CredentialKind;
  /** `sha256:<hex(authKey)>`. */
  authKeyDigest: string;
  /** The run the credential was issued for: a credential for another run is refused. */
  identity: RunIdentity;
  expiresAtUnixMs: number;
  /** A bootstrap ticket that already opened a session. */
  used: boolean;
  revoked: boolean;
  /** null for a bootstrap ticket. */
  leaseId: string | null;
  /** 0 for a bootstrap ticket. */
  revocationEpoch: number;
  /** The version a lease was issued under; null for a bootstrap ticket. */
  protocolVersion: number | null;
}

/** What the authority expects of every runner of one run (§5.3 step 2, §6.1). */
export interface RunExpectation {
  identity: RunIdentity;
  runnerVersion: string;
  runnerDigest: string;
  range: VersionRange;
  /** The authority's runner-contract policy: a refusal for a runner's contract digest (absent when it sent none), or null. */
  contract?: (contractDigest: string | undefined) => TransportError | null;
}

/** The lease the authority granted in its atomic re-authorization (§5.3 step 6). */
export interface LeaseGrant {
  /** `connection_<n>`. */
  connectionId: string;
  connectionLeaseId: string;
  /** The freshly minted `lease_<uuid>` after a bootstrap; null when the runner came with its lease. */
  connectionLeaseToken: string | null;
  connectionLeaseExpiresAtUnixMs: number;
  connectionLeaseRevocationEpoch: number;
  /** The committed cursor. */
  ackedSourceSeq: number;
  /** At most one. */
  pendingCommands: WelcomePayload["pendingCommands"];
}

/**
 * Step 2, the checks that need no lookup: the run's identity, the runner build, the protocol
 * range. The credential itself is checked by `ServerHandshake.challenge` once looked up.
 */
export function checkHelloAgainstRun(hello: AuthHello, expected: RunExpectation): TransportError | null {
  for (const field of IDENTITY_FIELDS) {
    if (hello[field] !== expected.identity[field])
      return { code: "identity_mismatch", path: `/payload/${field}`, message: `${field} is not this run's` };
  }
  // Before the build checks: "built for another contract" tells a person what to upgrade.
  const contract = expected.contract?.(hello.contractDigest);
  if (contract) return contract;
  if (hello.runnerVersion !== expected.runnerVersion)
    return {
      code: "runner_mismatch",
      path: "/payload/runnerVersion",
      message: "runnerVersion is not the expected build",
    };
  if (hello.runnerDigest !== expected.runnerDigest)
    return {
      code: "runner_mismatch",
      path: "/payload/runnerDigest",
      message: "runnerDigest is not the expected build",
    };
  if (hello.protocolMin !== expected.range.min || hello.protocolMax !== expected.range.max) {
    return {
      code: "version_mismatch",
      path: "/payload/protocolMin",
      message: `the protocol range ${hello.protocolMin}-${hello.protocolMax} is not the expected ${expected.range.min}-${expected.range.max}`,
    };
  }
  return null;
}

function checkCredential(hello: AuthHello, record: CredentialRecord, nowMs: number): TransportError | null {
  const path = "/payload/credentialId";
  if (record.credentialId !== hello.credentialId)
    return { code: "unknown_credential", path, message: "no such credential" };
  if (record.kind !== hello.credentialKind)
    return {
      code: "credential_kind_mismatch",
      path: "/payload/credentialKind",
      message: `the credential is a ${record.kind}`,
    };
  if (record.used) return { code: "credential_used", path, message: "the bootstrap ticket was already used" };
  if (record.revoked) return { code: "credential_revoked", path, message: "the credential is revoked" };
  if (record.expiresAtUnixMs <= nowMs)
    return { code: "credential_expired", path, message: "the credential has expired" };
  for (const field of IDENTITY_FIELDS) {
    if (record.identity[field] !== hello[field])
      return {
        code: "identity_mismatch",
        path: `/payload/${field}`,
        message: `the credential was issued for another ${field}`,
      };
  }
  return null;
}

function selectVersion(hello: AuthHello, record: CredentialRecord, expected: RunExpectation): Result<number> {
  const negotiated = negotiate(expected.range, { min: hello.protocolMin, max: hello.protocolMax });
  if (!negotiated.ok) return fail("version_mismatch", "/payload/protocolMax", negotiated.error.message);
  if (record.kind === "bootstrap") return ok(negotiated.version);
  const pinned = record.protocolVersion;
  if (pinned === null || pinned < Math.max(hello.protocolMin, expected.range.min) || pinned > negotiated.version) {
    return fail(
      "version_mismatch",
      "/payload/protocolMax",
      `the lease was issued under protocol version ${pinned}, outside the common range`,
    );
  }
  return ok(pinned);
}

/**
 * The server's side of §5.3 from the challenge to the session keys. Holds the auth key (from
 * the record's digest) until the response is verified or refused.
 */
export class ServerHandshake {
  private key: Buffer | null;

  private constructor(
    readonly hello: AuthHello,
    readonly record: CredentialRecord,
    readonly challenge: AuthChallenge,
    private readonly canonical: string,
    private readonly deadlineUnixMs: number,
    key: Buffer,
  ) {
    this.key = key;
  }

  /** Step 2 (the credential) and step 3. `serverNonce` is fixed only by test vectors. */
  static challenge(
    hello: AuthHello,
    record: CredentialRecord | undefined,
    expected: RunExpectation,
    nowMs: number,
    serverNonce: string = randomUUID(),
  ): Result<ServerHandshake> {
    const runError = checkHelloAgainstRun(hello, expected);
    if (runError) return { ok: false, error: runError };
    if (record === undefined) return fail("unknown_credential", "/payload/credentialId", "no such credential");
    const credentialError = checkCredential(hello, record, nowMs);
    if (credentialError) return { ok: false, error: credentialError };
    const version = selectVersion(hello, record, expected);
    if (!version.ok) return version;
    const key = authKeyFromDigest(record.authKeyDigest);
    if (key === null)
      return fail("unauthorized", "/payload/credentialId", "the credential record has no usable auth key digest");
    const fields: ChallengeFields = {
      ...pickIdentity(hello),
      credentialId: hello.credentialId,
      credentialKind: hello.credentialKind,
      clientNonce: hello.clientNonce,
      serverNonce,
      selectedVersion: version.value,
      credentialLeaseId: record.kind === "lease" ? record.leaseId : null,
      credentialExpiresAt: new Date(record.expiresAtUnixMs).toISOString(),
      credentialExpiresAtUnixMs: record.expiresAtUnixMs,
      revocationEpoch: record.kind === "lease" ? record.revocationEpoch : 0,
    };
    const canonical = canonicalChallenge(fields);
    const challenge: AuthChallenge = { ...fields, serverProof: serverProof(key, canonical) };
    const deadline = Math.min(record.expiresAtUnixMs, nowMs + CHALLENGE_TTL_MS);
    return ok(new ServerHandshake(hello, record, challenge, canonical, deadline, key));
  }

  /** Step 6's proof check and step 7. The authority's re-authorization comes after this. */
  verify(payload: Payload, nowMs: number): Result<{ response: AuthResponse; keys: SessionKeys }> {
    try {
      if (this.key === null) return fail("unexpected_message", "", "this challenge was already answered");
      const parsed = parseResponse(payload);
      if (!parsed.ok) return parsed;
      const response = parsed.value;
      for (const [member, expected] of [
        ["credentialId", this.hello.credentialId],
        ["clientNonce", this.hello.clientNonce],
        ["serverNonce", this.challenge.serverNonce],
      ] as const) {
        if (response[member] !== expected)
          return fail("echo_mismatch", `/payload/${member}`, `${member} is not the one of this handshake`);
      }
      if (nowMs > this.deadlineUnixMs)
        return fail("challenge_expired", "", "the challenge expired before the response arrived");
      if (!sameHex(clientProof(this.key, this.canonical, this.challenge.serverProof), response.clientProof)) {
        return fail("proof_mismatch", "/payload/clientProof", "the client proof does not verify");
      }
      return ok({
        response,
        keys: sessionKeys(this.key, this.canonical, this.challenge.serverProof, response.clientProof),
      });
    } finally {
      this.destroy();
    }
  }

  /** Step 8's payload from the authority's grant. */
  welcome(grant: LeaseGrant, maxFrameBytes = MAX_FRAME_BYTES, intervalMs = HEARTBEAT_INTERVAL_MS): WelcomePayload {
    const token = grant.connectionLeaseToken;
    return {
      selectedVersion: this.challenge.selectedVersion,
      heartbeatIntervalMs: intervalMs,
      connectionLeaseId: grant.connectionLeaseId,
      ...(token !== null ? { connectionLeaseToken: token } : {}),
      connectionLeaseExpiresAt: new Date(grant.connectionLeaseExpiresAtUnixMs).toISOString(),
      connectionLeaseExpiresAtUnixMs: grant.connectionLeaseExpiresAtUnixMs,
      connectionLeaseRevocationEpoch: grant.connectionLeaseRevocationEpoch,
      connectionLeaseRenewalVersion: LEASE_RENEWAL_VERSION,
      leaseBinding: token !== null ? credentialId(token) : this.hello.credentialId,
      maxFrameBytes,
      maxBatchEvents: MAX_BATCH_EVENTS,
      ackedSourceSeq: grant.ackedSourceSeq,
      pendingCommands: grant.pendingCommands,
    };
  }

  /** Zeroes the auth key; idempotent. */
  destroy(): void {
    this.key?.fill(0);
    this.key = null;
  }
}
