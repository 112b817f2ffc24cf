import { authKeyDigest, authKeyFromDigest } from "../transport/derive.js";
import type { CredentialKind } from "../transport/handshake-payloads.js";
import type { ServerKey } from "./server-key.js";

const AUTH_KEY_LABEL = "prp-authority-sealed-auth-key-v1";
const KEY_CHECK_LABEL = "prp-authority-server-key-check-v1";

/** The row a sealed auth key belongs to: it opens there and nowhere else. */
export interface CredentialPlace {
  credentialId: string;
  runId: string;
  kind: CredentialKind;
}

const context = (place: CredentialPlace): string[] => [place.credentialId, place.runId, place.kind];

/**
 * What a store writes for a credential's `authKeyDigest` (`sha256:<hex(authKey)>`, which is
 * the HMAC key itself, runtime.md §5.2): the key sealed under the server key, bound to its
 * row. Null when `digest` is not in that form.
 */
export function sealAuthKeyDigest(serverKey: ServerKey, digest: string, place: CredentialPlace): string | null {
  const key = authKeyFromDigest(digest);
  if (key === null) return null;
  try {
    return serverKey.seal(key, AUTH_KEY_LABEL, context(place));
  } finally {
    key.fill(0);
  }
}

/** The `sha256:<hex(authKey)>` back, or null when the value does not open in this row under this key. */
export function openAuthKeyDigest(serverKey: ServerKey, sealed: string, place: CredentialPlace): string | null {
  const key = serverKey.open(sealed, AUTH_KEY_LABEL, context(place));
  if (key === null || key.length !== 32) return null;
  try {
    return authKeyDigest(key);
  } finally {
    key.fill(0);
  }
}

/** A value only this server key opens: stored once, it tells a wrong key from a moved row. */
export const serverKeyCheck = (serverKey: ServerKey): string => serverKey.seal(Buffer.alloc(0), KEY_CHECK_LABEL, []);

export const opensServerKeyCheck = (serverKey: ServerKey, check: string): boolean =>
  serverKey.open(check, KEY_CHECK_LABEL, []) !== null;
