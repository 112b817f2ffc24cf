import { canonicalForm } from "./canonical-json.js";
import { decodeValue } from "./decode.js";
import type { ContractError } from "./errors.js";
import { parseJson, type JsonInput } from "./json-input.js";
import type { KindValues } from "./kinds.js";

/** The documents a runner commits or journals and the authority stores: both by their canonical JSON. */
export type AdmittedKind = "event" | "command";

export type Admission<K extends AdmittedKind> =
  | { ok: true; value: KindValues[K]; canonical: string }
  /**
   * `contract`: the codec refuses the document. `canonical_json`: the codec accepts it, but it
   * has no canonical JSON form (a lone surrogate, more than 10,000 values), so no authority can
   * store it, compare a redelivery with it or fingerprint it.
   */
  | { ok: false; refusedBy: "contract" | "canonical_json"; error: ContractError };

/**
 * The one admission rule for events and commands, applied wherever one is taken in: a runner's
 * sink before an event gets a sequence number (so nothing is committed that the authority will
 * refuse), the authority's ingest, and both sides' command intake (a command is fingerprinted by
 * its canonical JSON). The same function on every side means they cannot disagree: an event
 * the runner commits is one the authority accepts. Never throws for bad input.
 */
export function admit<K extends AdmittedKind>(kind: K, value: unknown): Admission<K> {
  const decoded = decodeValue(value, { kind });
  if (!decoded.ok) return { ok: false, refusedBy: "contract", error: decoded.error };
  const canonical = canonicalForm(decoded.value);
  if (!canonical.ok) return { ok: false, refusedBy: "canonical_json", error: canonical.error };
  return { ok: true, value: decoded.value as KindValues[K], canonical: canonical.text };
}

/** `admit` for JSON text or bytes, refused with the codec's parse errors first. */
export function admitText<K extends AdmittedKind>(kind: K, input: JsonInput, maxBytes?: number): Admission<K> {
  const parsed = parseJson(input, maxBytes);
  if (!parsed.ok) return { ok: false, refusedBy: "contract", error: parsed.error };
  return admit(kind, parsed.value);
}
