import { canonicalJson } from "../../contract/canonical-json.js";
import { sha256Hex } from "../../contract/digest.js";

/** A PRP id: an ASCII letter or digit, then letters, digits and `._:-` (wire.md generic id). */
const SAFE = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;
const MAX_RAW = 100;

/**
 * The PRP id of a provider identity (a JSON-RPC request id, a tool call id): `prefix_` and the
 * provider's own id when that is already a safe id, else `prefix_sha_` and a digest of it
 * (runtime.md §11.2 rule 5: noncanonical provider identities are projected deterministically).
 * Different provider ids can project to the same PRP id (the number 5 and the string "5"):
 * callers keep a map and fail closed on such a collision.
 */
export function projectId(prefix: string, providerId: unknown): string {
  if (
    (typeof providerId === "string" || typeof providerId === "number") &&
    SAFE.test(String(providerId)) &&
    String(providerId).length <= MAX_RAW
  ) {
    return `${prefix}_${providerId}`;
  }
  return `${prefix}_sha_${sha256Hex(canonicalJson(providerId ?? null)).slice(0, 32)}`;
}

/**
 * Projected id → provider id, one to one. `bind` returns an error message when the projected id
 * already stands for a different provider id (a projected-identity collision).
 */
export class IdMap {
  private readonly byProjected = new Map<string, string>();

  bind(projected: string, providerId: unknown): string | null {
    const key = canonicalJson(providerId ?? null);
    const known = this.byProjected.get(projected);
    if (known !== undefined && known !== key)
      return `projected id ${projected} already stands for provider id ${known}, not ${key}`;
    this.byProjected.set(projected, key);
    return null;
  }

  provider(projected: string): unknown {
    const key = this.byProjected.get(projected);
    return key === undefined ? undefined : JSON.parse(key);
  }
}
