import type * as T from "../contract/generated/types.js";
import { sameInstant, type Payload } from "./envelope.js";
import { fail, ok, type Result } from "./errors.js";
import { shapeRefusal } from "./shape.js";

/**
 * The handshake payloads (runtime.md §5.3). Their shapes are runner-handshake.schema.json; what
 * stays here is what a schema cannot state: rules between two members.
 */

/** Step 1. The identity fields sit beside the others, flat, as the challenge echoes them. */
export type AuthHello = T.RunnerAuthHelloPayload;
export type ResumePoint = T.RunnerResumePoint;
export type CredentialKind = AuthHello["credentialKind"];
/** Step 3: the signed members plus the proof over them. */
export type AuthChallenge = T.RunnerAuthChallengePayload;
/** Step 5. */
export type AuthResponse = T.RunnerAuthResponsePayload;

/**
 * Step 8: the payload of the sealed welcome (runner-handshake.schema.json#/$defs/welcomePayload,
 * checked with its envelope). `connectionLeaseToken` only after a bootstrap;
 * `connectionLeaseRenewalVersion` only from an authority that renews leases (§5.9).
 */
export type WelcomePayload = T.RunnerWelcomePayload;

export function parseHello(payload: Payload): Result<AuthHello> {
  const refused = shapeRefusal("runner_auth_hello", payload, "malformed_handshake", {}, "/payload");
  if (refused) return refused;
  const hello = payload as unknown as AuthHello;
  if (hello.protocolMin > hello.protocolMax)
    return fail("malformed_handshake", "/payload/protocolMin", "protocolMin must not exceed protocolMax");
  return ok(hello);
}

export function parseChallenge(payload: Payload): Result<AuthChallenge> {
  const refused = shapeRefusal("runner_auth_challenge", payload, "malformed_handshake", {}, "/payload");
  if (refused) return refused;
  const challenge = payload as unknown as AuthChallenge;
  return (
    sameInstant(
      challenge.credentialExpiresAt,
      challenge.credentialExpiresAtUnixMs,
      "malformed_handshake",
      "/payload/credentialExpiresAt",
    ) ?? ok(challenge)
  );
}

export function parseResponse(payload: Payload): Result<AuthResponse> {
  return (
    shapeRefusal("runner_auth_response", payload, "malformed_handshake", {}, "/payload") ??
    ok(payload as unknown as AuthResponse)
  );
}
