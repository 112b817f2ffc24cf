import type { Refusal } from "./errors.js";
import type { AuthorityStore } from "./store.js";

/** Leaves a refusal's diagnostic on its run, so nothing is refused silently, and returns the refusal. */
export async function recordRefusal(
  store: AuthorityStore,
  runId: string,
  refusal: Refusal,
  nowMs: number,
): Promise<Refusal> {
  const { code, path, message } = refusal.error;
  await store.recordDiagnostic(runId, { code, message: `${path || "/"}: ${message}` }, nowMs);
  return refusal;
}
