import { decodeValue } from "../../contract/decode.js";
import type { ContractError } from "../../contract/errors.js";

export interface ActivityPayload {
  namespace: string;
  activityKey: string;
}

/**
 * NAMESPACE and ACTIVITY_KEY checked by the contract's own rule for the payload (wire.md §7.7:
 * 1–160 code points each, no C0 control, no DEL, no lone surrogate): the same schema the
 * authority applies, so what passes here is never refused there.
 */
export function activityPayload(
  namespace: string,
  activityKey: string,
): { ok: true; value: ActivityPayload } | { ok: false; error: ContractError } {
  const payload = { namespace, activityKey };
  const decoded = decodeValue(payload, { kind: "runtime-activity" });
  return decoded.ok ? { ok: true, value: payload } : { ok: false, error: decoded.error };
}
