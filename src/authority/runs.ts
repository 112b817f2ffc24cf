import { isSupportedProtocolVersion, MAX_PROTOCOL_VERSION } from "../contract/versions.js";
import { fail, type Result } from "./errors.js";
import { checkIdentity } from "./identity.js";
import type { AuthorityStore, RunSnapshot } from "./store.js";

export interface RegisterRunOptions {
  /**
   * The version commands are built for until a lease pins one. Default 3, the version a
   * bootstrap negotiates when the expected range is this project's 1–3 (the hello's range must
   * equal the expected one, so the selected version is its maximum).
   */
  protocolVersion?: number;
  now?: () => number;
}

/**
 * Opens one run's durable state in the store: created the first time, found again after a
 * restart, refused when the configured identity is not exactly the stored one (§6.2 "Identity
 * on load") or a value does not match the identity pattern (§6.1).
 */
export async function registerRun(
  store: AuthorityStore,
  identity: unknown,
  options: RegisterRunOptions = {},
): Promise<Result<RunSnapshot>> {
  const checked = checkIdentity(identity);
  if (!checked.ok) return checked;
  const protocolVersion = options.protocolVersion ?? MAX_PROTOCOL_VERSION;
  if (!isSupportedProtocolVersion(protocolVersion))
    return fail(
      "invalid_protocol_version",
      "/protocolVersion",
      `protocol version ${String(protocolVersion)} is not supported`,
    );
  return store.registerRun(checked.value, { protocolVersion, nowMs: (options.now ?? Date.now)() });
}
