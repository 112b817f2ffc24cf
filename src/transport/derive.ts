import { createHash, createHmac } from "node:crypto";
import { canonicalJson } from "../contract/canonical-json.js";
import type { RunnerAuthChallengePayload as AuthChallengePayload } from "../contract/generated/types.js";
import { IDENTITY_FIELDS } from "./envelope.js";

/** The domain labels of runtime.md §5.2 and §5.3, byte for byte. */
export const LABELS = {
  credentialId: "paperclip-runner-credential-id-v1",
  authKey: "paperclip-runner-auth-key-v1",
  serverProof: "paperclip-runner-server-proof-v1",
  clientProof: "paperclip-runner-client-proof-v1",
  sessionBinding: "paperclip-runner-session-binding-v1",
  clientToCoreKey: "paperclip-runner-client-to-core-key-v1",
  coreToClientKey: "paperclip-runner-core-to-client-key-v1",
} as const;

/** Textual parts (tokens, JSON, hex) are their UTF-8 bytes (§5.2). */
export type Part = string | Uint8Array;

/**
 * The framed message every derivation hashes (§5.2): the UTF-8 label, one 0x00, then per part a
 * u64 big-endian length and the raw bytes. The length prefixes keep ["ab","c"] and ["a","bc"]
 * apart. The buffer may hold a token: callers zero it once hashed.
 */
export function domainMessage(label: string, parts: readonly Part[]): Buffer {
  const encoded = parts.map((part) => (typeof part === "string" ? Buffer.from(part, "utf8") : part));
  const labelBytes = Buffer.from(label, "utf8");
  const message = Buffer.alloc(labelBytes.length + 1 + encoded.reduce((n, p) => n + 8 + p.length, 0));
  let at = labelBytes.copy(message, 0) + 1; // the 0x00 separator is already there
  for (const part of encoded) {
    at = message.writeBigUInt64BE(BigInt(part.length), at);
    message.set(part, at);
    at += part.length;
  }
  // The UTF-8 copies of textual parts may be a token; the caller's own bytes are the caller's.
  encoded.forEach((bytes, i) => typeof parts[i] === "string" && bytes.fill(0));
  return message;
}

/** `digest_domain(label, parts)`: SHA-256 of the framed message. */
export function digestDomain(label: string, parts: readonly Part[]): Buffer {
  const message = domainMessage(label, parts);
  const digest = createHash("sha256").update(message).digest();
  message.fill(0);
  return digest;
}

/** `hmac_domain(key, label, parts)`: HMAC-SHA-256 of the framed message, keyed by the auth key. */
export function hmacDomain(key: Uint8Array, label: string, parts: readonly Part[]): Buffer {
  const message = domainMessage(label, parts);
  const mac = createHmac("sha256", key).update(message).digest();
  message.fill(0);
  return mac;
}

/** The public locator of a ticket or lease token: safe to log and to store. */
export function credentialId(token: Part): string {
  const digest = digestDomain(LABELS.credentialId, [token]);
  return `sha256:${digest.toString("hex")}`;
}

/** The 32-byte key both proofs and both session keys are keyed by. Zero it when done. */
export const authKey = (token: Part): Buffer => digestDomain(LABELS.authKey, [token]);

/**
 * What the server stores instead of the token (§5.2): `sha256:<hex(authKey)>`. The auth key is
 * itself a SHA-256 output of the token, and the server needs it to key the proofs, so the record
 * holds it under the digest's spelling and never the token.
 */
export const authKeyDigest = (key: Uint8Array): string =>
  `sha256:${Buffer.from(key.buffer, key.byteOffset, key.length).toString("hex")}`;

const AUTH_KEY_DIGEST = /^sha256:[0-9a-f]{64}$/;

/** The auth key back from a stored digest, or null when the record is not in that form. Zero it when done. */
export const authKeyFromDigest = (digest: string): Buffer | null =>
  AUTH_KEY_DIGEST.test(digest) ? Buffer.from(digest.slice(7), "hex") : null;

/** The members of the signed challenge (§5.3 step 3): the challenge payload without its proof. */
export type ChallengeFields = Omit<AuthChallengePayload, "serverProof">;

export const CHALLENGE_MEMBERS = [
  ...IDENTITY_FIELDS,
  "credentialId",
  "credentialKind",
  "clientNonce",
  "serverNonce",
  "selectedVersion",
  "credentialLeaseId",
  "credentialExpiresAt",
  "credentialExpiresAtUnixMs",
  "revocationEpoch",
] as const satisfies readonly (keyof ChallengeFields)[];

/**
 * The compact JSON with sorted keys both proofs sign. Exactly the listed members: `serverProof`
 * and anything else a challenge payload carries are left out, so a member added by a later
 * version cannot change what an older peer signs.
 */
export function canonicalChallenge(fields: ChallengeFields): string {
  return canonicalJson(Object.fromEntries(CHALLENGE_MEMBERS.map((member) => [member, fields[member]])));
}

/** §5.3 step 3: `hex(hmac_domain(authKey, server-proof, [canonicalChallenge]))`. */
export const serverProof = (key: Uint8Array, challenge: string): string =>
  hmacDomain(key, LABELS.serverProof, [challenge]).toString("hex");

/** §5.3 step 5: `hex(hmac_domain(authKey, client-proof, [canonicalChallenge, serverProofHex]))`. */
export const clientProof = (key: Uint8Array, challenge: string, serverProofHex: string): string =>
  hmacDomain(key, LABELS.clientProof, [challenge, serverProofHex]).toString("hex");

/** §5.3 step 7. The two keys are secret: the Sealer and Opener that take them zero them on close. */
export interface SessionKeys {
  binding: Buffer;
  sessionId: string;
  clientToCore: Buffer;
  coreToClient: Buffer;
}

export function sessionKeys(
  key: Uint8Array,
  challenge: string,
  serverProofHex: string,
  clientProofHex: string,
): SessionKeys {
  const binding = digestDomain(LABELS.sessionBinding, [challenge, serverProofHex, clientProofHex]);
  return {
    binding,
    sessionId: `sha256:${binding.toString("hex")}`,
    clientToCore: hmacDomain(key, LABELS.clientToCoreKey, [binding]),
    coreToClient: hmacDomain(key, LABELS.coreToClientKey, [binding]),
  };
}
