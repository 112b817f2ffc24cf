import { contractError, type ContractError } from "./errors.js";
import { MAX_PROTOCOL_VERSION, MIN_PROTOCOL_VERSION } from "./versions.js";

/** A peer's advertised protocol range, inclusive. */
export interface VersionRange {
  min: number;
  max: number;
}

export const LOCAL_RANGE: VersionRange = { min: MIN_PROTOCOL_VERSION, max: MAX_PROTOCOL_VERSION };

export type Negotiated = { ok: true; version: number } | { ok: false; error: ContractError };

const rangeText = (r: VersionRange) => `${r.min}-${r.max}`;
const isRange = (r: VersionRange) =>
  Number.isSafeInteger(r.min) && Number.isSafeInteger(r.max) && r.min >= 1 && r.min <= r.max;

/**
 * The highest protocol version both peers support (wire.md D2): min(maxA, maxB), valid only
 * if it is at least max(minA, minB). No overlap fails closed: no connection and no run.
 */
export function negotiate(local: VersionRange, peer: VersionRange): Negotiated {
  for (const [who, r] of [
    ["local", local],
    ["peer", peer],
  ] as const) {
    if (!isRange(r))
      return {
        ok: false,
        error: contractError(
          "unsupported_required_version",
          "",
          `the ${who} range ${JSON.stringify(r)} is not a range of positive integers with min <= max`,
        ),
      };
  }
  const version = Math.min(local.max, peer.max);
  if (version < Math.max(local.min, peer.min)) {
    return {
      ok: false,
      error: contractError(
        "unsupported_required_version",
        "",
        `unsupported_required_version: no common protocol version; local=${rangeText(local)}; peer=${rangeText(peer)}`,
      ),
    };
  }
  return { ok: true, version };
}
