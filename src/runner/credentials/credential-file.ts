import { readFileBounded } from "../../contract/bounded-read.js";
import { canonicalForm } from "../../contract/canonical-json.js";
import { sha256Hex } from "../../contract/digest.js";
import { isPlainObject } from "../../contract/plain-object.js";

/** A credential file larger than this is not a credential file (Codex's auth.json is a few KiB). */
export const MAX_CREDENTIAL_FILE_BYTES = 1024 * 1024;

/**
 * What one look at a credential file saw (runtime.md §13.1 baseline rules):
 * - `valid`: a whole JSON object, with the fingerprint of its canonical form;
 * - `unreadable`: absent (deleted, not yet written), not JSON (a write half done), not an object,
 *   or too large. It never claims a change, and the baseline stays what it was.
 */
export type CredentialLook = { kind: "valid"; fingerprint: string } | { kind: "unreadable" };

/**
 * Reads and fingerprints the credential file. The fingerprint covers the whole content in
 * canonical JSON: tokens and account identity alike, so a refresh or an account switch changes
 * it, and a rewrite of the same content (a touch, a chmod, another key order or spacing) does
 * not. A prefix of a JSON object is never a JSON object, so a partial write is never `valid`.
 * The fingerprint stays in the runner's private state; no event carries it.
 */
export function lookAtCredentialFile(path: string): CredentialLook {
  const read = readFileBounded(path, { maxBytes: MAX_CREDENTIAL_FILE_BYTES });
  if (!read.ok) return { kind: "unreadable" };
  let value: unknown;
  try {
    value = JSON.parse(read.bytes.toString("utf8"));
  } catch {
    return { kind: "unreadable" };
  }
  if (!isPlainObject(value) || Object.keys(value).length === 0) return { kind: "unreadable" };
  const canonical = canonicalForm(value);
  return canonical.ok ? { kind: "valid", fingerprint: sha256Hex(canonical.text) } : { kind: "unreadable" };
}
