import type { AuthorityStore } from "../authority/store.js";
import type { AdmissionCounts } from "../transport/admission.js";
import { AuthorityMetrics } from "./authority-metrics.js";
import type { HealthSource, ReadinessCheck } from "./health.js";

/** What of the authority process the health endpoints look at, once it exists. */
export interface AuthorityProbe {
  liveRunIds(): string[];
  admission(): AdmissionCounts;
  listening(): boolean;
}

/**
 * The authority daemon's metrics and readiness: the store answers a query of the migrated
 * schema (the run queue is schema version 4's), and the runner listener is up. (The API's
 * listener needs no check: a /readyz it answers is its proof.)
 * `probe` is read lazily: the observer must exist before the server it observes.
 */
export function authorityHealth(
  store: AuthorityStore,
  probe: () => AuthorityProbe | undefined,
): { metrics: AuthorityMetrics; source: HealthSource } {
  const metrics = new AuthorityMetrics({
    store,
    connections: () => {
      const p = probe();
      return { live: p?.liveRunIds().length ?? 0, unauthenticated: p?.admission().unauthenticated ?? 0 };
    },
  });
  const storeCheck: ReadinessCheck = {
    name: "store",
    check: async () => {
      await store.queuedRuns(1);
      return null;
    },
  };
  const runnerListener: ReadinessCheck = {
    name: "runner_listener",
    check: async () => (probe()?.listening() ? null : "the runner listener is not listening"),
  };
  return {
    metrics,
    source: { registry: metrics.registry, readiness: [storeCheck, runnerListener] },
  };
}
