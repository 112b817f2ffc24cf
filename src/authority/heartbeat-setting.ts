import { HEARTBEAT_INTERVAL_MS, MAX_HEARTBEAT_INTERVAL_MS, MIN_HEARTBEAT_INTERVAL_MS } from "../transport/limits.js";
import { fail, ok, type Result } from "./errors.js";

/** The interval the authority's welcome carries: the default, or the setting if in bounds. */
export function heartbeatIntervalSetting(value: number | undefined): Result<number> {
  if (value === undefined) return ok(HEARTBEAT_INTERVAL_MS);
  if (!Number.isSafeInteger(value) || value < MIN_HEARTBEAT_INTERVAL_MS || value > MAX_HEARTBEAT_INTERVAL_MS) {
    return fail(
      "heartbeat_out_of_range",
      "/heartbeatIntervalMs",
      `the heartbeat interval must be a whole number of ms from ${MIN_HEARTBEAT_INTERVAL_MS} to ${MAX_HEARTBEAT_INTERVAL_MS}, got ${value}`,
    );
  }
  return ok(value);
}
