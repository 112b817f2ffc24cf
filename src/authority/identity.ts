import { IDENTITY_FIELDS, IDENTITY_PATTERN, type RunIdentity } from "../transport/envelope.js";
import { fail, ok, type Result } from "./errors.js";

export { IDENTITY_FIELDS, IDENTITY_PATTERN, type RunIdentity };

/**
 * A run identity as the authority is configured with it (§6.1): exactly the six fields, each
 * matching IDENTITY_PATTERN (≤240 characters). The copy holds only those six, so nothing
 * else a caller's object carries is stored or compared.
 */
export function checkIdentity(value: unknown): Result<RunIdentity> {
  if (value === null || typeof value !== "object")
    return fail("invalid_identity", "", "the run identity must be an object");
  const source = value as Record<string, unknown>;
  const identity = {} as RunIdentity;
  for (const field of IDENTITY_FIELDS) {
    const v = source[field];
    if (typeof v !== "string" || !IDENTITY_PATTERN.test(v))
      return fail("invalid_identity", `/${field}`, `${field} must match ${IDENTITY_PATTERN.source}`);
    identity[field] = v;
  }
  return ok(identity);
}

/** The first field where two identities differ, or null when they are the same run. */
export function identityDifference(a: RunIdentity, b: RunIdentity): string | null {
  return IDENTITY_FIELDS.find((field) => a[field] !== b[field]) ?? null;
}

/** A new run's identity, every id named with the same suffix: `run_<suffix>`, `session_<suffix>`, … */
export const identityWithSuffix = (suffix: string): RunIdentity => ({
  runnerInstanceId: `runner_${suffix}`,
  environmentLeaseId: `env_${suffix}`,
  runId: `run_${suffix}`,
  normalizedSessionId: `session_${suffix}`,
  turnId: `turn_${suffix}`,
  itemId: `item_${suffix}`,
});
